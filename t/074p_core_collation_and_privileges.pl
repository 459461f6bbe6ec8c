# t/074_core_collation_and_privileges.pl with every subscription on PostgreSQL's pgoutput
# (plugin := 'pgoutput') and providers as users make them for it: the
# default output_plugin_libraries, nothing of this project installed
# (PA_PLUGIN, t/lib/PaTest.pm).  What cannot apply that way is skipped
# there, with the reason.
use strict;
use warnings;
use lib 't/lib';
use PaTest;

run_with_plugin('pgoutput', 't/074_core_collation_and_privileges.pl');
