package fs

// platformOptions are the mount options of the platform: none on Linux.
func platformOptions(MountOptions) []string { return nil }
