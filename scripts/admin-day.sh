#!/usr/bin/env bash
# admin-day.sh MOUNTPOINT: a day of administration with .ctl only.
#
# Against a mounted orgfs (e.g. `orgfs mount --demo DIR`), using nothing but
# the control files under MOUNTPOINT/.ctl (cat, echo, ls, jq): check the
# organization's balance; start a stopped computer and browse its live file
# system; get an access link (never printed); move minutes to the computer
# and back; stop it; make an image of it and assign the image to it; check
# today's action log for what was done. One line per step; any failure ends
# the script with a non-zero status and a message saying what went wrong.
#
# Environment: ADMIN_DAY_TIMEOUT, seconds to wait for each state change
# (default 60).
set -euo pipefail

if [[ $# -ne 1 ]]; then
	echo "usage: $0 MOUNTPOINT" >&2
	exit 2
fi
command -v jq >/dev/null || { echo "admin-day: jq is needed" >&2; exit 2; }

CTL=$1/.ctl
TIMEOUT=${ADMIN_DAY_TIMEOUT:-60}
[[ -d $CTL/machines ]] || { echo "admin-day: $CTL/machines not found: is orgfs mounted at $1?" >&2; exit 2; }

step() { echo "== $*"; }
die() { echo "admin-day: FAILED: $*" >&2; exit 1; }

# ctl_write VALUE FILE: writes VALUE to the control file FILE; on failure,
# shows the folder's result (the reason) and stops.
ctl_write() {
	local value=$1 file=$2
	if ! echo "$value" >"$file"; then
		echo "admin-day: writing '$value' to $file failed; $(dirname "$file")/result:" >&2
		cat "$(dirname "$file")/result" >&2 || true
		die "write to ${file#"$CTL"/} refused"
	fi
}

# wait_for WHAT WANT CMD...: polls CMD (its output, one word) once a second
# until it prints WANT, or fails after $TIMEOUT seconds.
wait_for() {
	local what=$1 want=$2 got deadline=$((SECONDS + TIMEOUT))
	shift 2
	while :; do
		got=$("$@" 2>&1 || true)
		[[ $got == "$want" ]] && { echo "   $what: $got"; return 0; }
		((SECONDS < deadline)) || die "$what: still '$got' after ${TIMEOUT}s, want '$want'"
		sleep 1
	done
}

# 1. The organization's balance.
org_minutes=$(jq -e .usage_minutes "$CTL/usage") || die "cannot read $CTL/usage"
step "organization balance: $org_minutes minutes"

# 2. A stopped computer, started.
ID=""
for d in "$CTL"/machines/*/; do
	id=$(basename "$d")
	if [[ $(cat "$d/status" 2>/dev/null || true) == off ]]; then
		ID=$id
		break
	fi
done
[[ -n $ID ]] || die "no computer is off (statuses: $(cat "$CTL"/machines/*/status | tr '\n' ' '))"
M=$CTL/machines/$ID
step "computer $ID ($(jq -r .name "$M/info")) is off: starting it"
ctl_write start "$M/power"
wait_for "computer $ID status" running cat "$M/status"

# 3. Its live file system.
users=$(ls "$M/live/C:/Users") || die "cannot list $M/live/C:/Users"
step "computer $ID C:\\Users holds: $(echo "$users" | tr '\n' ' ')"
[[ -n $users ]] || die "C:\\Users of computer $ID is empty"

# 4. An access link: checked, never shown.
ctl_write 30 "$M/access"
link=$(cat "$M/access")
[[ $link == http* ]] || die "access of computer $ID does not read as a link (${#link} characters)"
step "access link for 30 minutes obtained (${#link} characters, not shown)"
unset link

# 5. Minutes moved: 10 to the computer, 5 back. A computer's usage_minutes
# counts the team balance too when its usage_source is team_balance, so its
# own minutes are usage_minutes less the team balance then.
own_minutes() { # own_minutes USAGE_JSON ORG_MINUTES
	jq -e --argjson org "$2" 'if .usage_source == "team_balance" then .usage_minutes - $org else .usage_minutes end' <<<"$1"
}
usage_before=$(cat "$M/usage")
org_before=$(jq -e .usage_minutes "$CTL/usage")
echo "   before: $(jq -c '{usage_minutes, usage_source}' <<<"$usage_before"), team balance $org_before"
ctl_write 10 "$M/assign"
ctl_write 5 "$M/retrieve"
usage_after=$(cat "$M/usage")
org_after=$(jq -e .usage_minutes "$CTL/usage")
echo "   after:  $(jq -c '{usage_minutes, usage_source}' <<<"$usage_after"), team balance $org_after"
own_before=$(own_minutes "$usage_before" "$org_before")
own_after=$(own_minutes "$usage_after" "$org_after")
((own_after - own_before == 5)) || die "computer $ID's own minutes went from $own_before to $own_after, want +5"
((org_before - org_after == 5)) || die "the team balance went from $org_before to $org_after, want -5"
step "minutes moved: computer $ID's own minutes $own_before -> $own_after, team balance $org_before -> $org_after"

# 6. Stopped again.
ctl_write stop "$M/power"
wait_for "computer $ID status" off cat "$M/status"
step "computer $ID stopped"

# 7. An image of it, built, then assigned to it.
name="admin-day $(date -u +%H%M%S)"
ctl_write "{\"machine_id\": $ID, \"name\": \"$name\"}" "$CTL/images/new"
IMG=$(jq -e .record.id "$CTL/images/result") || die "no image id in images/result: $(cat "$CTL/images/result")"
step "image $IMG \"$name\" requested from computer $ID"
wait_for "image $IMG status" available jq -r .status "$CTL/images/$IMG/info"
ctl_write "$ID" "$CTL/images/$IMG/assign"
jq -e '.ok == true' "$CTL/images/$IMG/result" >/dev/null || die "image $IMG assign: $(cat "$CTL/images/$IMG/result")"
step "image $IMG assigned to computer $ID"

# 8. Today's action log: what was done to the computer.
log=$CTL/logs/$(date -u +%F).jsonl
summary=$(jq -s -c --argjson id "$ID" \
	'[.[] | select(.machine_id == $id) | .action_type] | group_by(.) | map({(.[0]): length}) | add // {}' "$log") ||
	die "cannot read $log"
step "today's log for computer $ID: $summary"
for action in machine_started machine_stopped image_created; do
	jq -e --arg a "$action" '(.[$a] // 0) > 0' <<<"$summary" >/dev/null || die "no $action record for computer $ID in $log"
done

echo "admin-day: done (computer $ID, image $IMG)"
