package metainfo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/digestkey"
	"github.com/ripple-dev/ripple/internal/plan"
	rsource "github.com/ripple-dev/ripple/internal/source"
)

// Setting is one setting of the Ripple explained.
type Setting struct {
	Flag  string `json:"flag"`
	Value string `json:"value"`
	// From is "flag", "default", or the reloader-meta-info ConfigMap as
	// "ConfigMap <namespace>/<name>".
	From string `json:"from"`
}

// Settings are the settings of the Ripple explained.
type Settings struct {
	Config config.Config
	Plan   plan.Settings
	// Shown are the settings that matter, with their origin.
	Shown []Setting
	// From says where the settings not given as flags come from.
	From string
	// Webhook, when set, says where webhook mode was set: Ripple then
	// posts changes and reloads nothing.
	Webhook string
	// Namespace is Ripple's, where it keeps its canary records; empty
	// when no meta-info was found.
	Namespace string
	// KeyUnread is why Digester could not read Ripple's digest key, which
	// exists (the user may not read it) or may (Ripple's namespace is not
	// known); nil when it read it, or when there is none, so that Ripple's
	// digests are unkeyed too.
	KeyUnread error
	// Unread is set when the meta-info could not be read (Unreadable):
	// the settings are the defaults and the flags given.
	Unread bool
}

// Info is what a reloader-meta-info ConfigMap says of its Ripple.
type Info struct {
	// Origin names the ConfigMap, "ConfigMap <ns>/<name>"; empty when none
	// was found.
	Origin string
	// Options are its reloaderOptions document.
	Options map[string]any
	// Published is when it was last written: when its Ripple started.
	Published time.Time
	// Searched is where it was looked for, when none was found.
	Searched string
	// Namespace is the ConfigMap's, its Ripple's own; or, when none was
	// found or read there, the namespace --ripple-namespace names.
	Namespace string
	// Unread names the ConfigMap the user may not read, and the right it
	// needs; empty when it was read or not found.
	Unread string
}

// metaFlags map the reloaderOptions keys to the flags they show, in the
// order the settings are shown. Those marked unlessDefault (the key
// renames, the shard count) are shown only when they are not the default.
var metaFlags = []struct {
	key, flag     string
	unlessDefault bool
}{
	{"namespaces", "namespaces", false},
	{"namespacesToIgnore", "namespaces-to-ignore", false},
	{"namespaceSelectors", "namespace-selector", false},
	{"resourceSelectors", "resource-label-selector", false},
	{"ignoredWorkloadTypes", "ignored-workload-types", false},
	{"isArgoRollouts", "is-Argo-Rollouts", false},
	{"isOpenshift", "is-openshift", false},
	{"enableCsiIntegration", "enable-csi-integration", false},
	{"resourcesToIgnore", "resources-to-ignore", false},
	{"reloadStrategy", "reload-strategy", false},
	{"digest", "digest", true},
	{"autoReloadAll", "auto-reload-all", false},
	{"reloadOnCreate", "reload-on-create", false},
	{"reloadOnDelete", "reload-on-delete", false},
	{"syncAfterRestart", "sync-after-restart", false},
	{"dryRun", "dry-run", false},
	{"settleWindow", "settle-window", false},
	{"reloadWindow", "reload-window", false},
	{"namespaceDefaults", "namespace-defaults", false},
	{"reloadPolicy", "reload-policy", false},
	{"restartMethod", "restart-method", false},
	{"canary", "canary", true},
	{"canaryBake", "canary-bake", true},
	{"canaryUnkept", "canary-unkept", true},
	{"configRollouts", "config-rollouts", true},
	{"tightenOnly", "tighten-only", true},
	{"approvalMaxAge", "approval-max-age", true},
	{"approvalsVerified", "approvals-verified", true},
	{"restartDeleteNamespaces", "restart-delete-namespaces", true},
	{"pinning", "pinning", true},
	{"annotationPrefix", "annotation-prefix", false},
	{"shardCount", "shard-count", true},
	{"reloaderAutoAnnotation", "auto-annotation", true},
	{"configmapReloaderAutoAnnotation", "configmap-auto-annotation", true},
	{"secretReloaderAutoAnnotation", "secret-auto-annotation", true},
	{"configmapUpdateOnChangeAnnotation", "configmap-annotation", true},
	{"secretUpdateOnChangeAnnotation", "secret-annotation", true},
	{"autoSearchAnnotation", "auto-search-annotation", true},
	{"searchMatchAnnotation", "search-match-annotation", true},
	{"ignoreResourceAnnotation", "ignore-annotation", true},
	{"pauseDeploymentAnnotation", "pause-deployment-annotation", true},
	{"pauseDeploymentTimeAnnotation", "pause-deployment-time-annotation", true},
}

// Flags are the flags of Ripple that change a decision, given to explain
// to override what the meta-info ConfigMap says. They are the controller's
// own flag groups, bound and validated by package config.
type Flags struct {
	opts *config.Options
	fs   *pflag.FlagSet
}

// BindFlags registers the scope, workload, declared kinds, reload and key
// flags on fs.
func BindFlags(fs *pflag.FlagSet) *Flags {
	o := config.NewOptions()
	o.ScopeOptions.BindFlags(fs)
	o.WorkloadOptions.BindFlags(fs)
	o.KindsOptions.BindFlags(fs)
	o.ReloadOptions.BindFlags(fs)
	o.KeyOptions.BindFlags(fs)
	return &Flags{opts: o, fs: fs}
}

// Resolve returns the settings: each flag given on the command line, else
// its value in meta, else its default. Errors name the flag at fault.
func (f *Flags) Resolve(meta Info) (Settings, error) {
	origin := map[string]string{}
	for _, m := range metaFlags {
		switch v, ok := metaValue(meta.Options, m.key); {
		case f.fs.Changed(m.flag):
			origin[m.flag] = "flag"
		case ok:
			if err := f.fs.Set(m.flag, v); err != nil {
				return Settings{}, fmt.Errorf("%s, reloaderOptions.%s: %w", meta.Origin, m.key, err)
			}
			origin[m.flag] = meta.Origin
		default:
			origin[m.flag] = "default"
		}
	}
	cfg, err := f.opts.Config()
	if err != nil {
		return Settings{}, err
	}
	// The controller's own settings, as it built them when it started.
	s := Settings{Config: cfg, Plan: cfg.PlanSettings(meta.Published)}
	s.From, s.Webhook, s.Namespace = meta.Origin, webhook(f.fs, meta), meta.Namespace
	switch {
	case meta.Unread != "":
		s.From, s.Unread = "the defaults: not read, "+meta.Unread, true
	case s.From == "":
		s.From = fmt.Sprintf("the defaults: no %s ConfigMap in %s", metaInfoName, meta.Searched)
	}
	for _, m := range metaFlags {
		fl := f.fs.Lookup(m.flag)
		if m.unlessDefault && fl.Value.String() == fl.DefValue {
			continue
		}
		s.Shown = append(s.Shown, Setting{Flag: "--" + m.flag, Value: flagValue(fl), From: origin[m.flag]})
	}
	return s, nil
}

// webhook says where webhook mode was set, if it was. The meta-info
// shows the URL only as set or not: it may hold a token.
func webhook(fs *pflag.FlagSet, meta Info) string {
	if fs.Changed("webhook-url") {
		return "--webhook-url given as a flag"
	}
	if _, ok := metaValue(meta.Options, "webhookUrl"); ok {
		return "webhookUrl " + from(meta.Origin)
	}
	return ""
}

// metaValue is the value of key in the reloaderOptions, as a flag value;
// ok is false when it is absent or empty.
func metaValue(opts map[string]any, key string) (string, bool) {
	switch v := opts[key].(type) {
	case bool:
		return strconv.FormatBool(v), true
	case string:
		return v, v != ""
	case float64: // a JSON number
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case []any:
		items := make([]string, 0, len(v))
		for _, it := range v {
			items = append(items, fmt.Sprint(it))
		}
		return strings.Join(items, ","), len(items) > 0
	}
	return "", false
}

// flagValue shows a flag's value; lists as a comma list.
func flagValue(f *pflag.Flag) string {
	if s, ok := f.Value.(pflag.SliceValue); ok {
		return strings.Join(s.GetSlice(), ",")
	}
	return f.Value.String()
}

// Flag shows the setting of flag (without its dashes) for a message:
// `--flag=value (from X)`.
func (s Settings) Flag(flag string) string {
	for _, sh := range s.Shown {
		if sh.Flag == "--"+flag {
			return fmt.Sprintf("%s=%s (%s)", sh.Flag, sh.Value, from(sh.From))
		}
	}
	return "--" + flag
}

func from(origin string) string {
	switch origin {
	case "flag":
		return "given as a flag"
	case "default":
		return "the default"
	}
	return "from " + origin
}

// Unreadable is Read's error when the user's credentials may not read
// Ripple's settings. Its Info is what to go on with: none found, Ripple's
// namespace when the caller named it, and Unread saying what could not be
// read. A command that only reads, or writes only the user's own object,
// may go on with the defaults and the flags given (Warning says so);
// approve may not: an approval decided otherwise than the controller
// decides would be refused.
type Unreadable struct {
	Info Info
	// instead is what the user may pass instead.
	instead string
	err     error
}

func (u *Unreadable) Error() string {
	return fmt.Sprintf("cannot read Ripple's settings, %s: %s", u.Info.Unread, u.instead)
}

func (u *Unreadable) Unwrap() error { return u.err }

// Warning is the one line a command that goes on without Ripple's
// settings prints: what could not be read and what to pass instead.
func (u *Unreadable) Warning() string {
	return fmt.Sprintf("warning: Ripple's settings not read, %s: deciding with Ripple's defaults and the flags given; %s", u.Info.Unread, u.instead)
}

// Read reads the reloader-meta-info ConfigMap: in namespace ns
// when it is set, else the only one labelled as such in the cluster. None
// found is no error: the defaults then apply. Credentials that may not
// read it get an *Unreadable error.
func Read(ctx context.Context, r client.Reader, ns string) (Info, error) {
	cm := &corev1.ConfigMap{}
	if ns != "" {
		err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: metaInfoName}, cm)
		switch {
		case apierrors.IsNotFound(err):
			// Its records are still where the user says Ripple runs.
			return Info{Searched: "namespace " + ns, Namespace: ns}, nil
		case apierrors.IsForbidden(err):
			info := Info{Namespace: ns, Unread: fmt.Sprintf("ConfigMap %s/%s (needs get on configmaps in namespace %s)", ns, metaInfoName, ns)}
			return info, &Unreadable{Info: info, err: err,
				instead: "the chart grants it to the groups of ripple.metaInfo.readers; else give the flags Ripple runs with (--help lists them)"}
		case err != nil:
			return Info{}, fmt.Errorf("reading ConfigMap %s/%s: %w", ns, metaInfoName, err)
		}
		return parse(cm)
	}
	list := &corev1.ConfigMapList{}
	err := r.List(ctx, list, client.HasLabels{metaInfoLabel})
	switch {
	case apierrors.IsForbidden(err):
		info := Info{Unread: fmt.Sprintf("the %s ConfigMap (finding it needs list on configmaps in every namespace)", metaInfoName)}
		return info, &Unreadable{Info: info, err: err, instead: "name Ripple's namespace with --ripple-namespace, or give the flags Ripple runs with (--help lists them)"}
	case err != nil:
		return Info{}, fmt.Errorf("finding the %s ConfigMap by its label %s (name its namespace with --ripple-namespace): %w", metaInfoName, metaInfoLabel, err)
	}
	var found []string
	for i := range list.Items {
		if list.Items[i].Name == metaInfoName {
			found = append(found, list.Items[i].Namespace)
			cm = &list.Items[i]
		}
	}
	switch len(found) {
	case 0:
		return Info{Searched: "the cluster"}, nil
	case 1:
		return parse(cm)
	}
	return Info{}, fmt.Errorf("%s ConfigMaps in namespaces %s: choose one with --ripple-namespace", metaInfoName, strings.Join(found, ", "))
}

func parse(cm *corev1.ConfigMap) (Info, error) {
	m := Info{Origin: fmt.Sprintf("ConfigMap %s/%s", cm.Namespace, cm.Name), Published: rsource.LastWrite(cm), Namespace: cm.Namespace}
	if err := json.Unmarshal([]byte(cm.Data["reloaderOptions"]), &m.Options); err != nil {
		return Info{}, fmt.Errorf("%s: reloaderOptions: %w", m.Origin, err)
	}
	return m, nil
}

// Digester is the Digester of the Ripple explained: its --digest mode and
// the key ring in its namespace, read with the user's credentials (explain
// never creates it). Without the key, per-key digests are compared unkeyed
// and keyed values are not recognised: a workload may then show a change
// Ripple does not see; the settings shown say so.
func (s *Settings) Digester(ctx context.Context, r client.Reader) digest.Digester {
	d := digest.Digester{Mode: s.Config.Digest}
	var err error
	switch {
	case s.Namespace == "" && s.Unread:
		// Ripple runs somewhere, maybe with a key: its digests may be keyed.
		err = errors.New("the namespace of Ripple is not known: name it with --ripple-namespace")
	case s.Namespace == "":
		return d
	default:
		d.Ring, err = digestkey.Read(ctx, r, s.Namespace)
	}
	if err == nil {
		return d
	}
	where := "Secret " + digestkey.Secret
	if s.Namespace != "" {
		where = "Secret " + s.Namespace + "/" + digestkey.Secret
	}
	if !apierrors.IsNotFound(err) {
		s.KeyUnread = err
	}
	s.Shown = append(s.Shown, Setting{Flag: "digest key", From: where,
		Value: "not read (" + err.Error() + "): per-key and keyed digests cannot be checked, and may show as changes"})
	return d
}
