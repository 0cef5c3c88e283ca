package config

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/ripple-dev/ripple/internal/annotation"
)

// KeyOptions rename annotation keys: Reloader's, one flag each, and
// Ripple's own, all under one prefix.
type KeyOptions struct {
	AnnotationPrefix string
	// Keys holds the values of the renaming flags; its other fields are
	// not used.
	Keys annotation.Keys
}

// rename is a flag that renames one of Reloader's annotation keys.
type rename struct {
	flag, usage string
	key         func(*annotation.Keys) *string
}

// renames are Reloader's annotation flags, in one list for binding and
// validation.
func renames() []rename {
	return []rename{
		{"auto-annotation", "Annotation that opts a workload in to reloads on every referenced config.", func(k *annotation.Keys) *string { return &k.Auto }},
		{"configmap-auto-annotation", "Annotation that opts a workload in to reloads on referenced ConfigMaps.", func(k *annotation.Keys) *string { return &k.ConfigMapAuto }},
		{"secret-auto-annotation", "Annotation that opts a workload in to reloads on referenced Secrets.", func(k *annotation.Keys) *string { return &k.SecretAuto }},
		{"configmap-annotation", "Annotation listing the ConfigMaps (names or patterns) that reload a workload.", func(k *annotation.Keys) *string { return &k.ConfigMapReload }},
		{"secret-annotation", "Annotation listing the Secrets (names or patterns) that reload a workload.", func(k *annotation.Keys) *string { return &k.SecretReload }},
		{"configmap-exclude-annotation", "Annotation listing the ConfigMaps that never reload a workload (Reloader 2's flag).", func(k *annotation.Keys) *string { return &k.ConfigMapExclude }},
		{"secret-exclude-annotation", "Annotation listing the Secrets that never reload a workload (Reloader 2's flag).", func(k *annotation.Keys) *string { return &k.SecretExclude }},
		{"secretproviderclass-auto-annotation", "Annotation that opts a workload in to reloads on mounted SecretProviderClasses (Reloader 2's flag).", func(k *annotation.Keys) *string { return &k.SecretProviderClassAuto }},
		{"secretproviderclass-annotation", "Annotation listing the SecretProviderClasses (names or patterns) that reload a workload (Reloader 2's flag).", func(k *annotation.Keys) *string { return &k.SecretProviderClassReload }},
		{"secretproviderclass-exclude-annotation", "Annotation listing the SecretProviderClasses that never reload a workload (Reloader 2's flag).", func(k *annotation.Keys) *string { return &k.SecretProviderClassExclude }},
		{"auto-search-annotation", "Annotation that makes a workload reload on referenced configs that carry the match annotation.", func(k *annotation.Keys) *string { return &k.Search }},
		{"search-match-annotation", "Annotation on a config that makes search workloads reload on it.", func(k *annotation.Keys) *string { return &k.Match }},
		{"ignore-annotation", "Annotation on a config that keeps it from reloading anything.", func(k *annotation.Keys) *string { return &k.Ignore }},
		{"pause-deployment-annotation", "Annotation holding a Deployment's pause period.", func(k *annotation.Keys) *string { return &k.PausePeriod }},
		{"pause-deployment-time-annotation", "Annotation where the pause start time is recorded.", func(k *annotation.Keys) *string { return &k.PausedAt }},
	}
}

func defaultKeyOptions() KeyOptions {
	return KeyOptions{AnnotationPrefix: annotation.DefaultPrefix, Keys: annotation.DefaultKeys(annotation.DefaultPrefix)}
}

// BindFlags registers the annotation flags.
func (o *KeyOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.AnnotationPrefix, "annotation-prefix", o.AnnotationPrefix, "Prefix of Ripple's own annotations (settle-window, applied).")
	for _, r := range renames() {
		p := r.key(&o.Keys)
		fs.StringVar(p, r.flag, *p, r.usage)
	}
}

// validate returns the keys: Ripple's own under the prefix, Reloader's as
// renamed.
func (o *KeyOptions) validate(errs *problems) annotation.Keys {
	if o.AnnotationPrefix == "" || strings.Contains(o.AnnotationPrefix, "/") {
		errs.bad("annotation-prefix", "%q is not an annotation prefix; use a DNS subdomain such as ripple.dev", o.AnnotationPrefix)
	}
	keys := annotation.DefaultKeys(o.AnnotationPrefix)
	for _, r := range renames() {
		v := *r.key(&o.Keys)
		if strings.TrimSpace(v) == "" {
			errs.bad(r.flag, "must not be empty")
			continue
		}
		*r.key(&keys) = v
	}
	return keys
}
