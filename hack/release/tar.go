package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"
)

// entry is one member of a tar archive. A name ending in "/" is a directory.
type entry struct {
	name     string
	mode     int64
	uid, gid int
	data     []byte
}

// writeTar writes entries sorted by name, each stamped with mtime and
// nothing else of the machine (no user names, no access times), so equal
// inputs give equal bytes.
func writeTar(w io.Writer, entries []entry, mtime time.Time) error {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeTarGz writes entries as a gzip-compressed tar to path; the gzip
// header carries no name and no time.
func writeTarGz(path string, entries []entry, mtime time.Time) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// A failed Close can lose written bytes: its error is the function's.
	defer func() { err = errors.Join(err, f.Close()) }()
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	if err := writeTar(zw, entries, mtime); err != nil {
		return err
	}
	return zw.Close()
}

// dirEntries reads a directory tree into tar entries named relative to
// dir, with fixed modes and owner: what is archived is the content, not
// the machine's umask. It reads through an os.Root, so nothing outside dir
// is archived.
func dirEntries(dir string) (out []entry, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	// Only read: a Close error loses nothing.
	defer func() { _ = root.Close() }()
	fsys := root.FS()
	err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == "." {
			return err
		}
		if d.IsDir() {
			out = append(out, entry{name: name + "/", mode: 0o755})
			return nil
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		out = append(out, entry{name: name, mode: 0o644, data: b})
		return nil
	})
	return out, err
}
