module github.com/orgfs/orgfs

go 1.26.8

require (
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/hashicorp/golang-lru/v2 v2.0.7
	github.com/sirupsen/logrus v1.10.2
	github.com/spf13/pflag v1.0.10
	golang.org/x/sync v0.24.0
)

require golang.org/x/sys v0.28.0 // indirect
