# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# selftests/lib/tap.sh - the one place that reads TAP (sourced by run.sh;
# selftests/runner/check-runner.sh tests it). The caller defines
# pass NAME, fail NAME and skip NAME REASON, which count and print.

# tail_diag N: the last N collected diagnostic lines, indented.
tail_diag() {
	local n=${#diag[@]} from
	from=$((n > $1 ? n - $1 : 0))
	[ "$n" -gt 0 ] || return 0
	printf '%s\n' "${diag[@]:$from}" | sed 's/^/        /'
}

# report SUITE-LABEL TAPFILE: per-test lines; diagnostics of failures.
# The one place that reads TAP.
report() {
	local label=$1 tap=$2 line diag=() planned=0 seen=0 name reason
	local after_fail=0	# in the diagnostics that follow a "not ok" line
	if [ ! -s "$tap" ]; then
		fail "$label (no TAP output)"
		return
	fi
	while IFS= read -r line; do
		# TAP's own diagnostics of a failure come after its "not ok"
		# line, indented ("#   ...") or as a YAML block ("  ---".."  ...");
		# they belong to that failure (check-report.sh, Test::More).
		if [ "$after_fail" = 1 ]; then
			case $line in
			"#   "*|"  "*)
				printf '        %s\n' "$line"
				continue
				;;
			esac
			after_fail=0
		fi
		case $line in
		"1.."*)
			planned=${line#1..}
			planned=${planned%%[!0-9]*}
			;;
		"ok "*|"not ok "*)
			seen=$((seen + 1))
			name=${line#not }
			name=${name#ok }
			name=${name#* }	# drop the number
			name=${name#- }	# and TAP's optional dash
			if [[ $line == "not ok "* ]] && [[ $name == *" # TODO"* ]]; then
				reason=${name#* # TODO}
				skip "$label/${name%% # TODO*}" "TODO${reason}"
			elif [[ $line == "ok "* ]] && [[ $name == *" # SKIP"* ]]; then
				reason=${name#* # SKIP}
				skip "$label/${name%% # SKIP*}" "${reason# }"
			elif [[ $line == "ok "* ]]; then
				pass "$label/${name%% # *}"
			else
				fail "$label/${name%% # *}"
				tail_diag 25
				after_fail=1
			fi
			diag=()
			;;
		"Bail out!"*)
			fail "$label (${line})"
			;;
		*)
			# harness chatter between results belongs to the next one
			case $line in
			"#  RUN "*|"# Starting "*|"TAP version"*) ;;
			*) diag+=("$line") ;;
			esac
			;;
		esac
	done < "$tap"
	if [ "$planned" -gt "$seen" ]; then
		fail "$label: $((planned - seen)) of $planned tests did not report (crash or timeout)"
		tail_diag 15
	fi
}

