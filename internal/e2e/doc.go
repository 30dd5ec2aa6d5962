// Package e2e holds no code: its tests run orgfs as its users do, the built
// binary as a child process (and cli.Main in-process for quick checks),
// against the emulator, on real FUSE mounts.
//
// Tests: main_test.go (the binary built once, help and usage errors, start
// errors, the daemon's life, signals, a crash), helper_test.go (the mount
// helper, fstab, systemd notify, mounts by a user who is not root),
// desk_test.go (orgfs sync, status, unmount, metrics), doctor_test.go
// (orgfs doctor against each emulator configuration; a mount with the
// service's clock off the desk's), emulator_test.go
// (orgfs emulator --data-dir), safety_test.go (two organizations in one
// cache dir, the exit status of files left staged, an outage mid-workload),
// model_test.go (random workloads with faults and SIGKILLs against a model),
// admin_day_test.go (scripts/admin-day.sh against the emulator),
// dialect_test.go (the core under the emulator's dialects; the model and the
// admin day run in them too).
package e2e
