#!/bin/bash
# ctest entry of the real-frame gauntlet (issue 15): see gauntlet.sh and gauntlet.py. Writes
# gauntlet-table.md in the working directory (build-*/tests). Fails when a row misses a target
# beyond tests/real/known-misses.txt, or when a listed row now meets its target.
exec bash "$(dirname "$0")/gauntlet.sh" "$@"
