// Package archtest holds no code: its tests check the shape of the module,
// the dependency arrows between its layers (api, place, writeback, cache,
// fs), that fs changes state only through the Store, the size limits of its
// files and functions, that docs/ARCHITECTURE.md names every file and only
// names that exist, and that the docs cite tests that exist, so that they
// stay true as it grows.
package archtest
