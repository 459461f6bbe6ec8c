#!/usr/bin/env bash
# Check that every relative link in the given Markdown files (default:
# README.md and docs/*.md), inline or by reference ([text][ref] with a
# "[ref]: target" line), names a file or directory that exists and, when
# it has a #fragment into a Markdown file, a heading of that file.  Anchors
# are computed as GitHub computes them: the heading's text (code spans and
# link targets dropped), lower case, every character that is not a letter,
# digit, '_', '-' or space removed, spaces made '-', and a repeated anchor
# given -1, -2, ... in order.  Links inside code (fenced blocks, `spans`)
# and to other sites (http:, https:, mailto:) are not checked.
# Exits 1 and prints file:line: target for each one that does not resolve.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- README.md docs/*.md
exec python3 - "$@" <<'PY'
import os, re, sys, unicodedata

def slug(text):
    text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', text)   # [text](url) -> text
    text = re.sub(r'<[A-Za-z/!][^>]*>', '', text)            # inline HTML tags
    text = text.replace('`', '').strip().lower()
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in '-_ ' or cat[0] in 'LMN':
            out.append('-' if ch == ' ' else ch)
    return ''.join(out)

def strip_code(lines):
    """Yield (lineno, line) outside fenced code, with inline code removed."""
    fence = None
    for n, line in enumerate(lines, 1):
        m = re.match(r'^\s*(```+|~~~+)', line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * 3
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is None:
            yield n, re.sub(r'`+[^`]*`+', '', line)

anchor_cache = {}
def anchors(path):
    if path not in anchor_cache:
        seen, found = {}, set()
        with open(path, encoding='utf-8') as f:
            lines = f.read().split('\n')
        fence = None
        for line in lines:
            m = re.match(r'^\s*(```+|~~~+)', line)
            if m:
                fence = None if fence else m.group(1)[0] * 3
                continue
            if fence:
                continue
            h = re.match(r'^(#{1,6})\s+(.*?)\s*#*\s*$', line)
            if h:
                base = slug(h.group(2))
                k = seen.get(base, 0)
                found.add(base if k == 0 else f'{base}-{k}')
                seen[base] = k + 1
            for a in re.findall(r'<a\s+(?:name|id)="([^"]+)"', line):
                found.add(a)
        anchor_cache[path] = found
    return anchor_cache[path]

link_re = re.compile(r'\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
refdef_re = re.compile(r'^\s{0,3}\[([^\]]+)\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$')
refuse_re = re.compile(r'\]\[([^\]]+)\]')
bad = 0
checked = 0
for md in sys.argv[1:]:
    with open(md, encoding='utf-8') as f:
        lines = f.read().split('\n')
    body = list(strip_code(lines))
    defs = {}
    for n, line in body:
        m = refdef_re.match(line)
        if m:
            defs[m.group(1).lower()] = (n, m.group(2))
    for n, line in body:
        for ref in refuse_re.findall(line):
            if ref.lower() not in defs:
                print(f'{md}:{n}: [{ref}]: reference link never defined')
                bad += 1
    for n, line in body:
        m = refdef_re.match(line)
        for target in ([m.group(2)] if m else []) + link_re.findall(line):
            if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I):
                continue
            checked += 1
            path, _, frag = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
            if not os.path.exists(dest):
                print(f'{md}:{n}: {target}: no such file')
                bad += 1
            elif frag and dest.endswith('.md') and frag not in anchors(dest):
                print(f'{md}:{n}: {target}: no heading with anchor #{frag} in {dest}')
                bad += 1
print(f'{checked} links checked in {len(sys.argv) - 1} files, {bad} broken')
sys.exit(1 if bad else 0)
PY
