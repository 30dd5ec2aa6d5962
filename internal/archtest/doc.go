// Package archtest holds no code: its tests check the shape of the module,
// the dependency arrows between its layers (api, cache, fs), the size
// limits of its files and functions, and that the docs cite tests that
// exist, so that they stay true as it grows.
package archtest
