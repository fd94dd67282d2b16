#!/usr/bin/env python3
"""rsync's shape (docs/rsync.md): no .cc in src/rsync over 600 lines, no
function there over 100 lines. Prints each offender; exit 1 if any.
Usage: check_rsync_shape.py [DIR] (default: src/rsync beside this script)."""
import os
import re
import sys

MAX_FILE, MAX_FUNC = 600, 100


def functions(lines):
    """(name, first line, length) of each brace block that opens a function
    body at namespace level or as a class member defined in place."""
    out, depth, start, name, stack = [], 0, None, None, []
    for i, line in enumerate(lines):
        code = re.sub(r'"(\\.|[^"\\])*"', '""', line.split('//')[0])
        for ch in code:
            if ch == '{':
                is_func = re.search(r'\)\s*(const)?\s*(override)?\s*(noexcept)?\s*(->\s*[\w:<>]+\s*)?\{', code) is not None
                stack.append((i, is_func and not any(f for _, f in stack)))
            elif ch == '}' and stack:
                begin, is_func = stack.pop()
                if is_func:
                    m = re.search(r'([\w:~]+)\s*\(', ''.join(lines[max(0, begin - 2):begin + 1]))
                    out.append((m.group(1) if m else '?', begin + 1, i - begin + 1))
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', 'src', 'rsync')
    bad = 0
    for f in sorted(os.listdir(root)):
        if not f.endswith('.cc'):
            continue
        path = os.path.join(root, f)
        lines = open(path, encoding='utf-8').read().split('\n')
        if len(lines) > MAX_FILE:
            print(f'{path}: {len(lines)} lines (at most {MAX_FILE})')
            bad += 1
        for name, line, n in functions(lines):
            if n > MAX_FUNC:
                print(f'{path}:{line}: {name} is {n} lines (at most {MAX_FUNC})')
                bad += 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
