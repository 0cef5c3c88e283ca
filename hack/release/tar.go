package main

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
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
func writeTarGz(path string, entries []entry, mtime time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	if err := writeTar(zw, entries, mtime); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// dirEntries reads a directory tree into tar entries named relative to
// root, with fixed modes and owner: what is archived is the content, not
// the machine's umask.
func dirEntries(root string) ([]entry, error) {
	var out []entry
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			out = append(out, entry{name: rel + "/", mode: 0o755})
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out = append(out, entry{name: rel, mode: 0o644, data: b})
		return nil
	})
	return out, err
}
