#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Compiles prog.p4 with $SDE_INSTALL/bin/bf-p4c and looks in the assembly for an ingress parser
# extraction into the container that holds ig_intr_md_from_prsr.parser_err.
# Exit 1: DEFECT (reproduced), 0: PASS (not reproduced), 2: no compiler (or it failed).
# With the argument --solitary it compiles prog.p4 plus @pa_solitary on parser_err (expect PASS).
here=$(cd "$(dirname "$0")" && pwd)
bfp4c="${SDE_INSTALL:-}/bin/bf-p4c"
if [ -z "${SDE_INSTALL:-}" ] || [ ! -x "$bfp4c" ]; then
    echo "no compiler: set SDE_INSTALL so that \$SDE_INSTALL/bin/bf-p4c exists"; exit 2
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if [ "${1:-}" = "--solitary" ]; then
    sed 's|^@pa_container_size|@pa_solitary("ingress", "ig_intr_md_from_prsr.parser_err")\n&|' \
        "$here/prog.p4" > "$tmp/prog.p4"
else
    cp "$here/prog.p4" "$tmp/prog.p4"
fi
if ! "$bfp4c" --std p4-16 --target tofino --arch tna -o "$tmp/out" "$tmp/prog.p4" > "$tmp/log" 2>&1; then
    echo "no compiler: bf-p4c failed"; tail -5 "$tmp/log"; exit 2
fi
bfa="$tmp/out/pipe/prog.bfa"
phv=$(grep -m1 -E '^ +ig_intr_md_from_prsr\.parser_err: \{ +stage' "$bfa")
cont=$(echo "$phv" | grep -oE '[BHW][0-9]+\(' | head -1 | tr -d '(')
[ -z "$cont" ] && cont=$(echo "$phv" | grep -oE ': [BHW][0-9]+ ' | head -1 | tr -d ': ')
# the ingress parser section: from "parser ingress:" to the next top-level key
ext=$(awk '/^parser ingress:/{p=1;next} /^[a-z]/{p=0} p' "$bfa" \
      | grep -E "^ +[0-9]+(\.\.[0-9]+)?: $cont( |$)")
echo "parser_err:  ${phv# *}"
echo "container:   $cont"
if [ -n "$ext" ]; then
    echo "DEFECT: the ingress parser writes packet bytes into $cont, which holds parser_err:"
    echo "$ext" | sort -u | sed 's/^ */    /'
    grep -E '^ +parser_error: ' "$bfa" | sed 's/^ */    /'
    exit 1
fi
echo "PASS: no ingress parser extraction into $cont"
exit 0
