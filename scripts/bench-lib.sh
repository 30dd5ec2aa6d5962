# Shared by scripts/bench-read and scripts/bench-write: settings, a work dir,
# the emulator as its own process with network play, a mount of it, timing.
# Sourced, not run.

SIZE=${BENCH_SIZE:-1G}
LAT=${BENCH_LATENCY:-20ms}
OLAT=${BENCH_OBJECT_LATENCY:-20ms}
RATE=${BENCH_STREAM_RATE:-100MB/s}
# The files live on tmpfs when there is room: the figures compare network
# paths, and a virtual disk's writeback would swamp both sides alike.
base=/tmp
if [ "$(df --output=avail -k /dev/shm 2>/dev/null | tail -1)" -gt $((6 * 1024 * 1024)) ] 2>/dev/null; then base=/dev/shm; fi
work=${BENCH_DIR:-$(mktemp -d "$base/orgfs-$(basename "$0").XXXXXX")}
mkdir -p "$work"
emu_pid="" mount_pid=""

cleanup() {
	if [ -n "$mount_pid" ] && kill -0 "$mount_pid" 2>/dev/null; then
		kill -INT "$mount_pid" 2>/dev/null || true
		wait "$mount_pid" 2>/dev/null || true
	fi
	fusermount3 -u -z "$work/mnt" 2>/dev/null || true
	[ -n "$emu_pid" ] && kill "$emu_pid" 2>/dev/null && wait "$emu_pid" 2>/dev/null
	if [ -n "${BENCH_KEEP:-}" ]; then
		echo "logs kept in $work (emulator.log, mount.log)" >&2
		rm -rf "$work/emu" "$work/cache" "$work"/*.bin "$work/src"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
# num succeeds when its argument is a finite number ("", "inf" and "3s" are not).
num() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }
# ratio A B prints A / B; a missing, zero or unparsable figure on either side
# fails the benchmark (a ratio of "inf" would read as a target met).
ratio() {
	if ! num "$1" || ! num "$2" || awk -v b="$2" 'BEGIN { exit !(b == 0) }'; then
		echo "bench: FAILED: ratio of '$1' to '$2': both must be numbers, the second above 0" >&2
		return 1
	fi
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'
}
# mibps BYTES SECONDS: MiB/s, with ratio's checks of both figures.
mibps() { ratio "$1" "$2" >/dev/null && awk -v n="$1" -v s="$2" 'BEGIN { printf "%.0f", n / s / 1048576 }'; }
# ok VALUE TARGET: "met" when VALUE >= TARGET; ok_below when VALUE <= TARGET
# (figures where lower is better); compared as numbers.
meets() {
	num "$2" && num "$3" || { echo "bench: FAILED: '$2' against '$3': not numbers" >&2; return 1; }
	awk -v op="$1" -v v="$2" -v t="$3" 'BEGIN { m = op == ">=" ? v + 0 >= t + 0 : v + 0 <= t + 0; print m ? "met" : "NOT met" }'
}
ok() { meets ">=" "$@"; }
ok_below() { meets "<=" "$@"; }
waitfor() { for _ in $(seq 1 600); do [ -e "$1" ] && return 0; sleep 0.1; done; echo "timed out waiting for $1" >&2; exit 1; }
# Each measurement starts with the disk quiet (earlier steps leave data to write back).
# timed prints how long the command took; a command that fails prints no
# time and fails the caller (a failed read must not score as a fast one:
# in $(...) set -e is off, so the status is passed on by hand).
timed() {
	sync
	local t0 t1
	t0=$(now)
	if ! "$@" >/dev/null; then
		echo "bench: FAILED: $*" >&2
		return 1
	fi
	t1=$(now)
	secs "$t0" "$t1"
}
# least prints the smallest of its arguments (times): the best of several
# tries; best2 and best3 for noisy or short measurements.
least() { printf '%s\n' "$@" | sort -n | head -1; }
# median prints the middle of its arguments (the lower middle of an even count).
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
best2() { least "$1" "$2"; }
best3() {
	local a b c
	a=$(timed "$@") || return 1
	b=$(timed "$@") || return 1
	c=$(timed "$@") || return 1
	least "$a" "$b" "$c"
}
fstype() { df --output=fstype "$work" | tail -1; }

# settle waits until the emulator is idle (its CPU time still for a second):
# it writes the seed's files and then its state in the background, and a
# figure taken meanwhile measures that too.
settle() {
	local prev=-1 cur
	for _ in $(seq 1 120); do
		cur=$(awk '{ print $14 + $15 }' "/proc/$emu_pid/stat")
		[ "$cur" = "$prev" ] && return 0
		prev=$cur
		sleep 1
	done
}

# build_tools puts orgfs, benchtool and rangefetch in the work dir: built
# from this checkout, or, with BENCH_BIN=DIR, copied from DIR (prebuilt, for
# a machine without Go: `make bench-bin` builds them into bench-bin/).
build_tools() {
	local t
	if [ -n "${BENCH_BIN:-}" ]; then
		for t in orgfs benchtool rangefetch; do
			[ -x "$BENCH_BIN/$t" ] || { echo "bench: FAILED: BENCH_BIN=$BENCH_BIN holds no executable $t (make bench-bin builds them)" >&2; exit 1; }
			cp "$BENCH_BIN/$t" "$work/$t"
		done
		echo "using the binaries of $BENCH_BIN ($("$work/orgfs" --version 2>/dev/null | head -1))" >&2
		return
	fi
	echo "building..." >&2
	go build -o "$work/orgfs" .
	go build -o "$work/benchtool" ./scripts/benchtool
	go build -o "$work/rangefetch" ./scripts/rangefetch
}

# start_all builds the tools, starts the emulator (seed bench, network play)
# and mounts it at $work/mnt; extra arguments go to orgfs mount.
start_all() {
	build_tools
	echo "starting the emulator..." >&2
	"$work/orgfs" emulator --listen 127.0.0.1:0 --seed bench --bench-file-size "${BENCH_SEED_SIZE:-$SIZE}" \
		--bench-huge "${BENCH_HUGE:-0}" --bench-tree "${BENCH_TREE:-0}" \
		--latency "$LAT" --object-latency "$OLAT" --stream-rate "$RATE" --step-delay 300ms \
		--data-dir "$work/emu" --credentials-dir "$work/creds" >"$work/emulator.log" 2>&1 &
	emu_pid=$!
	creds="$work/creds/org-a.json"
	waitfor "$creds"
	settle
	mkdir -p "$work/mnt"
	mount_args=("$@")
	start_mount
}

# start_mount mounts the emulator at $work/mnt with an empty cache.
start_mount() {
	[ -n "${KEEP_CACHE:-}" ] || rm -rf "$work/cache"
	"$work/orgfs" mount --credentials "$creds" --cache-dir "$work/cache" --cache-max-size 4G "${mount_args[@]}" "$work/mnt" >>"$work/mount.log" 2>&1 &
	mount_pid=$!
	waitfor "$work/mnt/shared/bench"
}

# remount starts the daemon again, cold: a new process and an empty cache;
# restart, a new process on the cache the last one left (an unmount and a
# mount, as at a reboot).
remount() {
	kill -INT "$mount_pid"
	wait "$mount_pid" || true
	start_mount
}
restart() {
	kill -INT "$mount_pid"
	wait "$mount_pid" || true
	KEEP_CACHE=1 start_mount
}
bt() { "$work/benchtool" -credentials "$creds" "$@"; }
rss_mib() { awk '/VmHWM/ { print int($2 / 1024) }' "/proc/$mount_pid/status"; }

# Results, for make bench (scripts/benchreport): with BENCH_RESULTS set to a
# dir, save_results NAME writes NAME.md (the table as printed), NAME.tsv
# (one line per chart_row: label, ratio, target, "higher" or "lower" is
# better) and machine.txt (cores, memory, kernel, date) there. chart_row
# LABEL RATIO TARGET DIRECTION adds a line.
chart_rows=""
chart_row() { chart_rows+="$1"$'\t'"$2"$'\t'"$3"$'\t'"$4"$'\n'; }
save_results() {
	local name=$1 table=$2
	printf '%s\n' "$table"
	[ -n "${BENCH_RESULTS:-}" ] || return 0
	mkdir -p "$BENCH_RESULTS"
	printf '%s\n' "$table" >"$BENCH_RESULTS/$name.md"
	printf '%s' "$chart_rows" >"$BENCH_RESULTS/$name.tsv"
	# where and when, for benchreport (each machine has its part of docs/BENCHMARKS.md)
	printf 'cores=%s\nmem_gib=%s\nkernel=%s\ndate=%s\n' "$(nproc)" \
		"$(awk '/^MemTotal:/ { print int(($2 + 1048575) / 1048576) }' /proc/meminfo)" \
		"$(uname -r)" "$(date -u +%F)" >"$BENCH_RESULTS/machine.txt"
}

# avail_bytes: free bytes on the file system of the work dir.
avail_bytes() { df --output=avail -B1 "$work" | tail -1; }
