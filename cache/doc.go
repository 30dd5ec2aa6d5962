// Package cache holds what orgfs keeps between the kernel and the service:
//
//   - Dirs (dirs.go): folder listings and the computer list, in memory for a
//     time to live; the listing read-ahead (dirahead.go) lists the
//     subfolders of a folder read in the background.
//   - Content (content.go, adopt.go): file contents on local disk, block by
//     block in sparse files, under a byte budget; an uploaded file's staged
//     data becomes its entry.
//   - Fetcher (fetch.go): fills Content with ranged GETs of presigned URLs,
//     reading ahead while reading is sequential.
//   - Reader.ReadDirect (direct.go): reads past the cache when it cannot
//     hold a block (a full disk), by ranged GETs straight into the caller's
//     buffer.
//   - Bundler (bundle.go): fetches a folder's small files in one ZIP when they
//     are read one after another.
//   - The I/O timeout (wait.go): a caller (a syscall of the mount) waits
//     --io-timeout at most for an answer (Store.Bound), and for content
//     until none came for that long (Reader.Ready); what it waited for goes
//     on by its own rules.
//   - The Store (store.go, retire.go): the caches as the mount sees them,
//     and every change made through them, driving the write side (package
//     writeback: the staged files and their uploads); the old folders of
//     folders renamed with their content.
//   - Attrs (attrs.go, attrs_journal.go): the modes, owners and times set on
//     this desk, which the service does not keep, in a journal in the cache
//     dir.
//
// Every request goes through Client (client.go), the methods of *api.Client
// the package calls.
//
// # Lock order
//
// A lock may be taken while holding only locks above it:
//
//  1. Fetcher.mu (Open holds it while it acquires a cache entry)
//  2. Reader.mu (a read's planning)
//  3. fileFetch.mu (a file's fetches in flight)
//  4. Content.mu
//  5. entry.mu (one cache entry)
//
// Dirs.mu, Bundler.mu and Attrs.mu are leaves: each is taken alone, never
// with another lock of the package; so is writeback's Staging.mu. The Fetcher calls the Bundler, and the Bundler the Content, with
// no lock held.
//
// # Locks and I/O
//
// No lock of the package is held across a request to the service or the
// object store, nor across a wait for one (shared fetches wait in a
// singleflight group or on a channel, without a lock). Locks held across
// local disk I/O, small operations only:
//
//   - Content.mu and entry.mu: opening, creating, truncating and unlinking an
//     entry's files and writing its record (JSON). Block data is read and
//     written with neither held. Fetcher.mu is held across Content.Acquire, so
//     across that too.
//   - Staging.mu: creating, opening, closing and unlinking a staged file,
//     reading (at the start) and writing its record (JSON), setting its
//     modification time. Staged data is read and written (by the mount and by
//     an upload) without it.
//
// Dirs.mu, Bundler.mu, Reader.mu and fileFetch.mu are never held across I/O.
// The listing read-ahead starts its shared fetches (singleflight.DoChan,
// which takes the group's own lock and returns at once) with Dirs.mu held,
// so that a reader of the folder from then on joins them.
//
// Callbacks (StagingOptions.OnUploaded and OnFailed) are called with no lock
// held.
package cache
