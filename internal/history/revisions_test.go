package history

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

func replicaSet(name string, ann map[string]string, hashLabel string) appsv1.ReplicaSet {
	t := tpl()
	t.Labels = map[string]string{"app": "web", hashLabel: "5d8f"}
	return appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann, CreationTimestamp: metav1.NewTime(t0)},
		Spec:       appsv1.ReplicaSetSpec{Template: *t},
	}
}

func TestFromReplicaSets(t *testing.T) {
	tests := map[string]struct {
		rss     []appsv1.ReplicaSet
		rollout bool
		want    []string // Object#Number[Earlier]
	}{
		"deployment": {
			rss: []appsv1.ReplicaSet{
				replicaSet("web-a", map[string]string{deploymentRevision: "1"}, deploymentHashLabel),
				replicaSet("web-b", map[string]string{deploymentRevision: "4", deploymentRevisionHistory: "3,2"}, deploymentHashLabel),
				replicaSet("web-c", map[string]string{"other": "x"}, deploymentHashLabel),
				replicaSet("web-d", map[string]string{rolloutRevision: "5"}, deploymentHashLabel),
			},
			want: []string{"ReplicaSet/web-a#1[]", "ReplicaSet/web-b#4[2 3]"},
		},
		"argo rollout": {
			rss: []appsv1.ReplicaSet{
				replicaSet("ro-a", map[string]string{rolloutRevision: "2", rolloutRevisionHistory: "1"}, rolloutHashLabel),
				replicaSet("ro-b", map[string]string{deploymentRevision: "7"}, rolloutHashLabel),
			},
			rollout: true,
			want:    []string{"ReplicaSet/ro-a#2[1]"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			revs := FromReplicaSets(tc.rss, tc.rollout)
			var got []string
			for _, r := range revs {
				got = append(got, fmt.Sprintf("%s#%d%v", r.Object, r.Number, r.Earlier))
				if _, ok := r.Template.Labels[deploymentHashLabel]; ok {
					t.Errorf("%s: the hash label is left on the template", r.Object)
				}
				if _, ok := r.Template.Labels[rolloutHashLabel]; ok {
					t.Errorf("%s: the hash label is left on the template", r.Object)
				}
				if r.Template.Labels["app"] != "web" {
					t.Errorf("%s: labels %v, want app=web kept", r.Object, r.Template.Labels)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("revisions %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFromControllerRevisions(t *testing.T) {
	t1 := tpl(image("db:2"))
	t1.Labels = map[string]string{"app": "db", controllerRevisionLabel: "6c4b"}
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": t1}})
	if err != nil {
		t.Fatal(err)
	}
	// The controllers write "$patch": "replace" into the template.
	patched := strings.Replace(string(data), `"template":{`, `"template":{"$patch":"replace",`, 1)
	crs := []appsv1.ControllerRevision{{
		ObjectMeta: metav1.ObjectMeta{Name: "db-6c4b", CreationTimestamp: metav1.NewTime(t0)},
		Revision:   3, Data: runtime.RawExtension{Raw: []byte(patched)},
	}}
	revs, err := FromControllerRevisions(crs)
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != 1 || revs[0].Number != 3 || revs[0].Object != "ControllerRevision/db-6c4b" ||
		revs[0].Template.Spec.Containers[0].Image != "db:2" || len(revs[0].Template.Labels) != 1 {
		t.Errorf("revisions %+v", revs)
	}

	crs[0].Data.Raw = []byte("{not json")
	if _, err := FromControllerRevisions(crs); err == nil || !strings.Contains(err.Error(), "db-6c4b") {
		t.Errorf("undecodable data: error %v, want one naming the ControllerRevision", err)
	}
}

func TestPrint(t *testing.T) {
	h := Build(Input{
		Workload: Workload{Kind: "Deployment", Namespace: "shop", Name: "web"},
		Revisions: []Revision{
			rev(1, tpl(), `{"ConfigMap/app":"`+sumA+`"}`),
			rev(2, tpl(env(appEnv, sumB)), ""),
		},
		Keys: keys, Strategy: strategy.EnvVars{}, Configs: nil,
		Now: map[refs.Ref]Now{app: {Found: true, Digest: sumC}},
	})
	var table strings.Builder
	if err := Print(&table, FormatTable, h); err != nil {
		t.Fatal(err)
	}
	want := `Deployment shop/web, reload strategy env-vars

REVISION  STARTED               BY      CONFIGS                              CHANGES        WHY
1         2026-11-25T10:01:00Z  other   ConfigMap/app=aaaaaaaaaaaa (record)  -              first revision
2*        2026-11-25T10:02:00Z  ripple  ConfigMap/app=bbbbbbbbbbbb (env)     ConfigMap/app  only what a reload writes changed

* current revision 2: its pods may read data newer than it was built for: ConfigMap/app (built for bbbbbbbbbbbb, now cccccccccccc)
`
	if table.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", table.String(), want)
	}
	var js strings.Builder
	if err := Print(&js, FormatJSON, h); err != nil {
		t.Fatal(err)
	}
	var back History
	if err := json.Unmarshal([]byte(js.String()), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Revisions) != 2 || back.Revisions[1].Configs[0].Digest != "bbbbbbbbbbbb" || back.Current.Changed[0].Now != "cccccccccccc" {
		t.Errorf("json:\n%s", js.String())
	}
	if strings.Contains(js.String(), sumB) {
		t.Errorf("json shows a whole digest, not a short one:\n%s", js.String())
	}
}
