package manifest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// describe prints an object as "Go type Kind namespace/name", so a table
// can say at once what was loaded, in which order, and how it was typed.
func describe(obj client.Object) string {
	return fmt.Sprintf("%T %s %s/%s", obj, obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName())
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name      string
		paths     []string
		stdin     string
		namespace string
		want      []string
	}{
		{
			name:  "multi-document YAML with Helm comments and empty documents",
			paths: []string{"testdata/multi.yaml"},
			want: []string{
				"*v1.Deployment Deployment default/web",
				"*v1.ConfigMap ConfigMap shop/web-config",
				"*v1.Secret Secret default/web-secret",
				// Cluster-scoped, as far as anyone offline knows: left alone.
				"*unstructured.Unstructured ClusterRole /reader",
				"*unstructured.Unstructured Rollout default/canary",
			},
		},
		{
			name:      "namespace given by the caller",
			paths:     []string{"testdata/multi.yaml"},
			namespace: "staging",
			want: []string{
				"*v1.Deployment Deployment staging/web",
				"*v1.ConfigMap ConfigMap shop/web-config",
				"*v1.Secret Secret staging/web-secret",
				"*unstructured.Unstructured ClusterRole /reader",
				"*unstructured.Unstructured Rollout staging/canary",
			},
		},
		{
			name:  "List and typed list without item kinds",
			paths: []string{"testdata/list.yaml"},
			want: []string{
				"*v1.ConfigMap ConfigMap shop/one",
				"*v1.StatefulSet StatefulSet default/db",
				"*v1.ConfigMap ConfigMap default/two",
			},
		},
		{
			name:  "JSON stream",
			paths: []string{"testdata/objects.json"},
			want: []string{
				"*v1.CronJob CronJob ops/nightly",
				"*unstructured.Unstructured SecretProviderClass default/vault",
			},
		},
		{
			name:  "directory walked recursively in lexical order, manifests only",
			paths: []string{"testdata/dir"},
			want: []string{
				"*v1.ConfigMap ConfigMap default/a",
				"*v1.ConfigMap ConfigMap default/b",
				"*v1.DaemonSet DaemonSet default/c",
			},
		},
		{
			name:  "a file named on its own loads whatever its extension",
			paths: []string{"testdata/dir/nested/c.yml", Stdin},
			stdin: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: once}\n",
			want: []string{
				"*v1.DaemonSet DaemonSet default/c",
				"*v1.Job Job default/once",
			},
		},
		{
			name:  "stdin as JSON",
			paths: []string{Stdin},
			stdin: `{"apiVersion": "apps.openshift.io/v1", "kind": "DeploymentConfig", "metadata": {"name": "legacy"}}`,
			want:  []string{"*unstructured.Unstructured DeploymentConfig default/legacy"},
		},
		{
			name:  "empty stdin",
			paths: []string{Stdin},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Load(tt.paths, strings.NewReader(tt.stdin), tt.namespace)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, describe(o))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Load =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestLoadDecodesTypedObjects(t *testing.T) {
	objs, err := Load([]string{"testdata/multi.yaml"}, nil, "")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	d, ok := objs[0].(*appsv1.Deployment)
	if !ok {
		t.Fatalf("first object is %T, want a Deployment", objs[0])
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	if got := d.Spec.Template.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name; got != "web-config" {
		t.Errorf("envFrom ConfigMap = %q, want web-config", got)
	}
	if got := d.Annotations["reloader.stakater.com/auto"]; got != "true" {
		t.Errorf("auto annotation = %q, want true", got)
	}

	s, ok := objs[2].(*corev1.Secret)
	if !ok {
		t.Fatalf("third object is %T, want a Secret", objs[2])
	}
	// The API server merges stringData into data; the digest is of data.
	want := map[string]string{"user": "admin", "password": "hunter2"}
	if len(s.Data) != len(want) || s.StringData != nil {
		t.Errorf("Secret data has keys %d, stringData %d; want %d and 0", len(s.Data), len(s.StringData), len(want))
	}
	for k, v := range want {
		if string(s.Data[k]) != v {
			t.Errorf("Secret data key %q is not the expected value", k) // never print Secret data
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		paths []string
		stdin io.Reader
		want  []string // substrings of the error
	}{
		{name: "document without apiVersion and kind", paths: []string{"testdata/multi.yaml", "testdata/bad/nokind.yaml"},
			want: []string{"testdata/bad/nokind.yaml: document 2:", "not a Kubernetes object"}},
		{name: "document without apiVersion", paths: []string{"testdata/bad/noapiversion.yaml"},
			want: []string{"testdata/bad/noapiversion.yaml: document 1:", "ConfigMap has no apiVersion"}},
		{name: "YAML syntax", paths: []string{"testdata/bad/syntax.yaml"},
			want: []string{"testdata/bad/syntax.yaml: document 1:"}},
		{name: "field of the wrong type", paths: []string{"testdata/bad/badfield.yaml"},
			want: []string{"testdata/bad/badfield.yaml: document 1:", "Deployment web is not a valid Deployment", "spec.replicas"}},
		{name: "List item without kind", paths: []string{"testdata/bad/listitem.yaml"},
			want: []string{"testdata/bad/listitem.yaml: document 1:", "List item 2:", "no apiVersion and kind"}},
		{name: "missing path", paths: []string{"testdata/nothing-here.yaml"},
			want: []string{"testdata/nothing-here.yaml", "no such file"}},
		{name: "stdin without a reader", paths: []string{Stdin},
			want: []string{"stdin"}},
		{name: "stdin not an object", paths: []string{Stdin}, stdin: strings.NewReader("- a\n- b\n"),
			want: []string{"<stdin>: document 1:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Load(tt.paths, tt.stdin, "")
			if err == nil {
				t.Fatalf("Load returned %d objects and no error", len(objs))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadErrorNeverQuotesSecretData(t *testing.T) {
	_, err := Load([]string{"testdata/bad/badsecret.yaml"}, nil, "")
	if err == nil {
		t.Fatal("Load accepted a Secret whose data is not base64")
	}
	if !strings.Contains(err.Error(), "testdata/bad/badsecret.yaml: document 1: Secret s") {
		t.Errorf("error %q does not name the file, document and Secret", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error quotes the Secret's data: %q", err)
	}
}

// TestLoadChartOutput loads the Helm chart's rendered golden manifests:
// real Helm output, with its comments, empty documents and CRD kinds.
func TestLoadChartOutput(t *testing.T) {
	files, err := filepath.Glob("../../test/chart/testdata/golden/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no chart golden files (%v)", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			objs, err := Load([]string{f}, nil, "")
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := strings.Count(readFile(t, f), "\nkind: ")
			if len(objs) != want {
				t.Errorf("loaded %d objects, the file has %d top-level kinds", len(objs), want)
			}
			var deployments int
			for _, o := range objs {
				if d, ok := o.(*appsv1.Deployment); ok {
					deployments++
					if d.Namespace != "ripple-system" || len(d.Spec.Template.Spec.Containers) == 0 {
						t.Errorf("Deployment %s/%s has %d containers", d.Namespace, d.Name, len(d.Spec.Template.Spec.Containers))
					}
				}
			}
			if deployments != 1 {
				t.Errorf("%d typed Deployments, want Ripple's one", deployments)
			}
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The input is bounded: a file over maxFile, or files over maxTotal in
// all, is refused before it is decoded, with an error naming the file and
// the bound; stdin is bounded as a file is.
func TestLoadBoundsTheInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int) string {
		p := filepath.Join(dir, name)
		doc := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + strings.TrimSuffix(name, ".yaml") + "\ndata:\n  v: "
		if err := os.WriteFile(p, []byte(doc+strings.Repeat("x", size-len(doc))+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := write("big.yaml", maxFile+1)
	half := write("half.yaml", maxTotal/2+1)
	fits := write("fits.yaml", 1024)
	bigStdin, err := os.Open(filepath.Clean(big))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bigStdin.Close() }()
	for _, tc := range []struct {
		name  string
		paths []string
		stdin io.Reader
		want  string
	}{
		{"one file over the bound", []string{fits, big}, nil, big + ": larger than 32 MiB, the most read of one file"},
		{"stdin over the bound", []string{Stdin}, bigStdin, "<stdin>: larger than 32 MiB, the most read of one file"},
		{"files over the bound in all", []string{half, half}, nil, half + ": over 32 MiB with the files before it, the most read in all"},
		{"a directory's files over the bound in all", []string{dir}, nil, "larger than 32 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Load(tc.paths, tc.stdin, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load returned %d objects, error %v; want an error saying %q", len(objs), err, tc.want)
			}
		})
	}
	if objs, err := Load([]string{fits, half}, nil, ""); err != nil || len(objs) != 2 {
		t.Errorf("Load of files within the bounds: %d objects, %v", len(objs), err)
	}
}

// A directory's walk reads the regular files in it only: a symbolic link
// named like a manifest is refused, wherever it points (the tree may be a
// pull request's, whose author chooses its links), naming the link; a
// link named on its own is read, as the user named it.
func TestLoadRefusesLinksInADirectory(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(outside, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: outside\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"outside the tree": outside,
		"inside the tree":  "app.yaml",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, "z-link.yaml")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			objs, err := Load([]string{dir}, nil, "")
			if want := link + " is a symbolic link"; err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Load returned %d objects, error %v; want an error saying %q", len(objs), err, want)
			}
			if objs, err := Load([]string{link}, nil, ""); err != nil || len(objs) != 1 {
				t.Errorf("Load of the link named on its own: %d objects, %v", len(objs), err)
			}
		})
	}
}
