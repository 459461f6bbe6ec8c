/*-------------------------------------------------------------------------
 *
 * cpus.c
 *		What the machine's CPUs are doing, as far as this process may use
 *		them: how many it may run on, how many tasks are runnable, and
 *		their busy and idle time.
 *
 * Two decisions of the subscriber depend on free CPUs: the adaptive rule
 * takes a writer more only while a CPU is idle (leader/adapt.c, from the
 * ticks), and a writer spins before it sleeps for its commit turn only
 * while fewer tasks are runnable than it has CPUs (writer/order.c).  Both
 * count the CPUs of the process's affinity mask (sched_getaffinity), not
 * the machine's: a server pinned to some CPUs (taskset, a cpuset cgroup)
 * must not count the CPUs where its provider or the load run as free.
 *
 * Linux only (/proc/stat, /proc/loadavg, the affinity mask); elsewhere
 * the functions say "unknown" and the callers take their defaults (the
 * adaptive rule keeps one writer, writers spin).  The files are read with
 * the backend's file API (storage/fd.h), so a read interrupted by an
 * error leaks no descriptor.
 *
 * src/common/cpus.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <fcntl.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

#include "storage/fd.h"

#include "common/cpus.h"

int
pa_cpus_usable(void)
{
#ifdef __linux__
	cpu_set_t	set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		return CPU_COUNT(&set);
#endif
#ifdef _SC_NPROCESSORS_ONLN
	return (int) Max(sysconf(_SC_NPROCESSORS_ONLN), 0);
#else
	return 0;
#endif
}

/* The numerator of /proc/loadavg's fourth field, "runnable/total". */
int
pa_cpus_runnable(void)
{
	char		buf[128];
	int			fd;
	ssize_t		n;
	int			runnable = -1;
	const char *p;

	fd = OpenTransientFile("/proc/loadavg", O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	CloseTransientFile(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "0.50 0.40 0.30 3/412 12345": the number before the slash */
	p = strchr(buf, '/');
	if (p == NULL)
		return -1;
	while (p > buf && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (sscanf(p, "%d/", &runnable) != 1)
		return -1;
	return runnable;
}

/*
 * From /proc/stat's per-CPU lines ("cpuN user nice system idle iowait
 * ..."), the CPUs of the affinity mask only; idle is idle and iowait.
 */
bool
pa_cpus_ticks(uint64 *total, uint64 *idle, int *ncpu)
{
	FILE	   *f;
	char		line[256];
#ifdef __linux__
	cpu_set_t	set;
	bool		have_set = sched_getaffinity(0, sizeof(set), &set) == 0;
#endif

	f = AllocateFile("/proc/stat", "r");
	if (f == NULL)
		return false;
	*total = 0;
	*idle = 0;
	*ncpu = 0;
	while (fgets(line, sizeof(line), f) != NULL)
	{
		unsigned long long v[8] = {0};
		int			cpu;
		int			n;

		if (strncmp(line, "cpu", 3) != 0)
			break;				/* the cpu lines come first */
		if (!isdigit((unsigned char) line[3]))
			continue;			/* the first line, all CPUs together */
		n = sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu",
				   &cpu, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
		if (n < 6)
			continue;
#ifdef __linux__
		if (have_set && (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set)))
			continue;
#endif
		for (int i = 0; i < n - 1; i++)
			*total += v[i];
		*idle += v[3] + v[4];	/* idle, iowait */
		(*ncpu)++;
	}
	FreeFile(f);
	return *ncpu > 0;
}
