#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the kernel's checkpatch.pl (from the staged linux-source subset) on
# every patch in patches/linux/ and, with --strict (as series-check runs
# it on the patches), on our own kernel files in drivers/ and include/.
# Exits non-zero on any error, warning or, for our files, CHECK.
#
#   tools/checkpatch.sh PRISTINE_DIR
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
pristine=${1:-$top/build/linux/pristine}
cp=$pristine/scripts/checkpatch.pl
[ -x "$cp" ] || [ -f "$cp" ] || { echo "checkpatch.pl not staged (make stage)" >&2; exit 2; }

# checkpatch finds spelling.txt and const_structs.checkpatch next to itself.
# Patches carry no Signed-off-by: they are not sent upstream from here.
# Their Fixes: tags name upstream kernel commits, which checkpatch would
# look up in the git repository it runs in - ours, never a kernel tree.
opts=(--no-tree --quiet --show-types --no-signoff --ignore FILE_PATH_CHANGES
      --ignore UNKNOWN_COMMIT_ID)
fail=0
for p in "$top"/patches/linux/*.patch "$top"/patches/linux-cma/*.patch; do
	[ -e "$p" ] || continue
	if ! out=$(perl "$cp" "${opts[@]}" "$p" 2>&1); then
		echo "checkpatch: $(basename "$p")"; echo "$out"; fail=1
	fi
done
while IFS= read -r f; do
	if ! out=$(perl "$cp" "${opts[@]}" --strict -f "$f" 2>&1) || [ -n "$out" ]; then
		echo "checkpatch: ${f#"$top"/}"; echo "$out"; fail=1
	fi
done < <(find "$top/drivers" "$top/include" -type f \( -name '*.[ch]' \) 2>/dev/null)
[ $fail = 0 ] && echo "checkpatch: clean ($(ls "$top"/patches/linux/*.patch "$top"/patches/linux-cma/*.patch 2>/dev/null | wc -l) patches, our kernel files)"
exit $fail
