# orgfs: build, test, demo.
GO      ?= go
BIN     ?= orgfs
DEMODIR ?= .demo
MNT     ?= mnt
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo devel)

.PHONY: build test fmt-check vet darwin lint unit soak bench bench-bin docs demo emulator clean install uninstall package

# Where make install puts things (DESTDIR for packaging).
PREFIX  ?= /usr/local
SBINDIR ?= /sbin
UNITDIR ?= /etc/systemd/system
USERUNITDIR ?= $(PREFIX)/lib/systemd/user

# make package: nfpm, pinned, through the module proxy (nothing to install);
# the package version is VERSION made a Debian and RPM one (0.0.0+git<hash>
# without a tag).
NFPM ?= github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
PKGVERSION ?= $(shell echo '$(VERSION)' | sed -e 's/^v//' -e '/^[0-9][0-9]*\./!s/^/0.0.0+git/' -e 's/-/+/g')
PKGARCHS ?= amd64 arm64

# staticcheck, pinned, run through the module proxy (nothing to install).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

build:
	$(GO) build -ldflags "-X github.com/orgfs/orgfs/internal/cli.version=$(VERSION)" -o $(BIN) .

# The test command of README.md and CI: formatting, vet, and every test under the race detector.
test: fmt-check vet darwin lint unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# macOS: the code builds and vets for darwin (macFUSE, FUSE-T).
darwin:
	GOOS=darwin $(GO) build ./...
	GOOS=darwin $(GO) vet ./...

lint:
	$(GO) run $(STATICCHECK) ./...

unit:
	$(GO) test -race -count=1 -timeout 20m ./...

# The model test, long: 16 workers, a 10% fault rate, 100 rounds, under the
# race detector; every byte is read back from the service at the end.
# ORGFS_MODEL_SEED=N reproduces a run.
soak:
	ORGFS_MODEL_WORKERS=$${ORGFS_MODEL_WORKERS:-16} ORGFS_MODEL_ROUNDS=$${ORGFS_MODEL_ROUNDS:-100} \
	ORGFS_MODEL_FAULTS=$${ORGFS_MODEL_FAULTS:-0.1} $(GO) test -race -count=1 -timeout 60m -run '^TestModel$$' -v ./internal/e2e

# The benchmarks (scripts/bench-read, bench-write, bench-fio; as root or with
# fusermount3, and fio and jq), then their tables and chart into
# docs/BENCHMARKS.md and docs/bench-Ncore.svg (N: this machine's cores; each
# machine measured keeps its own part of docs/BENCHMARKS.md). Not part of make
# test; BENCH_SIZE and the other variables of scripts/bench-lib.sh pass through.
# With BENCH_BIN=DIR the scripts take the prebuilt binaries of DIR (orgfs,
# benchtool, rangefetch, benchreport; `make bench-bin` makes them) and need no
# Go: copy DIR and the checkout to a benchmark machine and run
# `make bench BENCH_BIN=bench-bin` there.
BENCH_RESULTS ?= /tmp/orgfs-bench-results
BENCH_REPORT = $(if $(BENCH_BIN),$(BENCH_BIN)/benchreport,$(GO) run ./scripts/benchreport)
bench:
	rm -rf '$(BENCH_RESULTS)'
	BENCH_RESULTS='$(BENCH_RESULTS)' scripts/bench-read
	BENCH_RESULTS='$(BENCH_RESULTS)' scripts/bench-write
	BENCH_RESULTS='$(BENCH_RESULTS)' scripts/bench-fio
	$(BENCH_REPORT) -results '$(BENCH_RESULTS)' -doc docs/BENCHMARKS.md -svg 'docs/bench-%dcore.svg'

# The benchmarks' binaries, for BENCH_BIN (static: they run on a machine
# without Go or the same C library).
bench-bin:
	mkdir -p bench-bin
	CGO_ENABLED=0 $(GO) build -ldflags "-X github.com/orgfs/orgfs/internal/cli.version=$(VERSION)" -o bench-bin/orgfs .
	CGO_ENABLED=0 $(GO) build -o bench-bin/benchtool ./scripts/benchtool
	CGO_ENABLED=0 $(GO) build -o bench-bin/rangefetch ./scripts/rangefetch
	CGO_ENABLED=0 $(GO) build -o bench-bin/benchreport ./scripts/benchreport

# docs/CONFIGURATION.md, rendered again from the commands' flag sets
# (internal/cli/confdoc.go); make test fails while it is not current.
docs:
	ORGFS_UPDATE_DOCS=1 $(GO) test -count=1 -run '^TestConfigurationDocIsCurrent$$' ./internal/cli

# The emulator with demo data, mounted at ./mnt in the foreground; Ctrl-C unmounts.
demo: build
	@mkdir -p $(MNT)
	./$(BIN) mount --demo $(MNT)

# The emulator alone, for scripts and API clients (credentials in .demo/).
emulator: build
	./$(BIN) emulator --seed demo --listen 127.0.0.1:8080 --credentials-dir $(DEMODIR)

clean:
	rm -rf $(BIN) $(DEMODIR) bench-bin

# The binary, the mount helper links (mount -t fuse.orgfs, /etc/fstab) and the
# systemd unit template (systemctl enable --now orgfs@mnt-org).
install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/orgfs
	install -d $(DESTDIR)$(SBINDIR)
	ln -sf $(PREFIX)/bin/orgfs $(DESTDIR)$(SBINDIR)/mount.fuse.orgfs
	ln -sf $(PREFIX)/bin/orgfs $(DESTDIR)$(SBINDIR)/mount.orgfs
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(USERUNITDIR)
	sed 's#/usr/local/bin/orgfs#$(PREFIX)/bin/orgfs#g' scripts/orgfs@.service > $(DESTDIR)$(UNITDIR)/orgfs@.service
	sed 's#/usr/local/bin/orgfs#$(PREFIX)/bin/orgfs#g' scripts/orgfs-user@.service > $(DESTDIR)$(USERUNITDIR)/orgfs@.service
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	$(abspath $(BIN)) completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/orgfs
	$(abspath $(BIN)) completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_orgfs
	$(abspath $(BIN)) completion fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/orgfs.fish
	$(abspath $(BIN)) __man $(DESTDIR)$(PREFIX)/share/man >/dev/null

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/orgfs $(DESTDIR)$(SBINDIR)/mount.fuse.orgfs $(DESTDIR)$(SBINDIR)/mount.orgfs $(DESTDIR)$(UNITDIR)/orgfs@.service $(DESTDIR)$(USERUNITDIR)/orgfs@.service
	rm -f $(DESTDIR)$(PREFIX)/share/man/man1/orgfs.1 $(DESTDIR)$(PREFIX)/share/man/man8/mount.fuse.orgfs.8
	rm -f $(DESTDIR)$(PREFIX)/share/bash-completion/completions/orgfs $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_orgfs $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/orgfs.fish

# dist/orgfs_<version>_<arch>.deb and the matching .rpm for each of
# PKGARCHS: the files of make install (PREFIX=/usr), the man pages gzipped,
# a Debian changelog of the last commits, the binary built for each arch
# as make build builds it, static and stripped (packaging/nfpm.yaml).
package: build
	rm -rf dist && mkdir -p dist
	$(MAKE) install DESTDIR=$(CURDIR)/dist/root PREFIX=/usr SBINDIR=/sbin UNITDIR=/lib/systemd/system USERUNITDIR=/usr/lib/systemd/user
	gzip -9n dist/root/usr/share/man/man1/orgfs.1 dist/root/usr/share/man/man8/mount.fuse.orgfs.8
	{ echo 'orgfs ($(PKGVERSION)) unstable; urgency=medium'; echo; git log -30 --format='  * %s' | cut -c1-79; echo; \
	  echo " -- orgfs <orgfs@users.noreply.github.com>  $$(git log -1 --format=%aD)"; } | gzip -9n > dist/root/changelog.gz
	for arch in $(PKGARCHS); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -ldflags "-s -w -X github.com/orgfs/orgfs/internal/cli.version=$(VERSION)" -o dist/root/usr/bin/orgfs . || exit 1; \
		for p in deb rpm; do \
			ARCH=$$arch VERSION='$(PKGVERSION)' $(GO) run $(NFPM) package --config packaging/nfpm.yaml --packager $$p --target dist/ || exit 1; \
		done; \
	done
	rm -rf dist/root
	ls -l dist
