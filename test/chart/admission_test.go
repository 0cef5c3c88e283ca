package chart

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/admission"
	"github.com/ripple-dev/ripple/internal/config"
)

// admissionValues turns the webhook on, with more values merged in.
func admissionValues(more map[string]any) map[string]any {
	return deepMerge(map[string]any{"ripple": map[string]any{"admission": map[string]any{"enabled": true}}}, more)
}

// admissionCM is the ripple.admission.certificate.certManager value set.
func admissionCM(cm map[string]any) map[string]any {
	return map[string]any{"ripple": map[string]any{"admission": map[string]any{"certificate": map[string]any{"certManager": cm}}}}
}

// webhookConfig returns the rendered ValidatingWebhookConfiguration, or nil.
func webhookConfig(t *testing.T, objs []*unstructured.Unstructured) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	found := find(objs, "ValidatingWebhookConfiguration")
	if len(found) == 0 {
		return nil
	}
	if len(found) > 1 {
		t.Fatalf("%d ValidatingWebhookConfigurations, want 1", len(found))
	}
	w := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(found[0].Object, w); err != nil {
		t.Fatal(err)
	}
	if len(w.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(w.Webhooks))
	}
	return w
}

// renderedSecret returns the rendered Secret named name, or nil.
func renderedSecret(t *testing.T, objs []*unstructured.Unstructured, name string) *corev1.Secret {
	t.Helper()
	for _, o := range find(objs, "Secret") {
		if o.GetName() != name {
			continue
		}
		s := &corev1.Secret{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	return nil
}

// checkWebhook checks what every rendering of the webhook must hold: it
// never blocks a write (Ignore, at most 2 s), has no side effects, speaks
// admission v1 and calls /validate-configs on the Service
// <fullname>-admission in Ripple's namespace, which forwards 443 to the
// container's admission port.
func checkWebhook(t *testing.T, objs []*unstructured.Unstructured, fullname, ns string) admissionregistrationv1.ValidatingWebhook {
	t.Helper()
	w := webhookConfig(t, objs)
	if w == nil {
		t.Fatal("no ValidatingWebhookConfiguration")
	}
	if w.Name != fullname {
		t.Errorf("webhook configuration %q, want %q", w.Name, fullname)
	}
	wh := w.Webhooks[0]
	if wh.FailurePolicy == nil || *wh.FailurePolicy != admissionregistrationv1.Ignore {
		t.Errorf("failurePolicy %v: Ripple down must never block a write", wh.FailurePolicy)
	}
	if wh.TimeoutSeconds == nil || *wh.TimeoutSeconds < 1 || *wh.TimeoutSeconds > 2 {
		t.Errorf("timeoutSeconds %v, want 1 or 2", wh.TimeoutSeconds)
	}
	if wh.SideEffects == nil || *wh.SideEffects != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("sideEffects %v, want None", wh.SideEffects)
	}
	if wh.MatchPolicy == nil || *wh.MatchPolicy != admissionregistrationv1.Equivalent {
		t.Errorf("matchPolicy %v, want Equivalent", wh.MatchPolicy)
	}
	if !slices.Equal(wh.AdmissionReviewVersions, []string{"v1"}) {
		t.Errorf("admissionReviewVersions %q", wh.AdmissionReviewVersions)
	}
	svc := wh.ClientConfig.Service
	if svc == nil || svc.Name != fullname+"-admission" || svc.Namespace != ns || svc.Path == nil || *svc.Path != "/validate-configs" || svc.Port == nil || *svc.Port != 443 {
		t.Errorf("clientConfig.service %+v, want %s-admission.%s:443/validate-configs", svc, fullname, ns)
	}
	var service *corev1.Service
	for _, o := range find(objs, "Service") {
		if o.GetName() == fullname+"-admission" {
			service = &corev1.Service{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, service); err != nil {
				t.Fatal(err)
			}
		}
	}
	if service == nil || len(service.Spec.Ports) != 1 || service.Spec.Ports[0].Port != 443 || service.Spec.Ports[0].TargetPort.String() != "admission" {
		t.Fatalf("the Service %s-admission must forward 443 to the admission port: %+v", fullname, service)
	}
	return wh
}

// TestAdmissionWebhook: the webhook's rules follow what Ripple acts on
// (UPDATE always, CREATE and DELETE with reloadOnCreate and
// reloadOnDelete, only the config kinds it watches), its selectors keep
// it off Ripple's namespace, off the namespaces Ripple does not watch and
// off Namespaces and configs labelled <prefix>/admission: disabled, and
// extra selectors only narrow it.
func TestAdmissionWebhook(t *testing.T) {
	optOut := metav1.LabelSelectorRequirement{Key: "ripple.dev/admission", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"disabled"}}
	notOwn := metav1.LabelSelectorRequirement{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{relNS}}
	for _, tc := range []struct {
		name       string
		values     map[string]any
		operations []admissionregistrationv1.OperationType
		resources  []string
		nsSel      metav1.LabelSelector
		objSel     metav1.LabelSelector
	}{
		{"defaults", nil, []admissionregistrationv1.OperationType{"UPDATE"}, []string{"configmaps", "secrets"},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{notOwn, optOut}},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{optOut}}},
		{"reloadOnCreate", r(map[string]any{"reloadOnCreate": true}), []admissionregistrationv1.OperationType{"UPDATE", "CREATE"}, []string{"configmaps", "secrets"},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{notOwn, optOut}},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{optOut}}},
		{"reloadOnDelete", r(map[string]any{"reloadOnDelete": true}), []admissionregistrationv1.OperationType{"UPDATE", "DELETE"}, []string{"configmaps", "secrets"},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{notOwn, optOut}},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{optOut}}},
		{"both, Secrets ignored", r(map[string]any{"reloadOnCreate": true, "reloadOnDelete": true, "ignoreSecrets": true}), []admissionregistrationv1.OperationType{"UPDATE", "CREATE", "DELETE"}, []string{"configmaps"},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{notOwn, optOut}},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{optOut}}},
		{"ConfigMaps ignored", r(map[string]any{"ignoreConfigMaps": true}), []admissionregistrationv1.OperationType{"UPDATE"}, []string{"secrets"},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{notOwn, optOut}},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{optOut}}},
		{"ignoreNamespaces", r(map[string]any{"ignoreNamespaces": "kube-system, kube-public"}), []admissionregistrationv1.OperationType{"UPDATE"}, []string{"configmaps", "secrets"},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{relNS, "kube-system", "kube-public"}}, optOut}},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{optOut}}},
		{"scoped", r(map[string]any{"namespaces": []any{"team-b", "team-a"}}), []admissionregistrationv1.OperationType{"UPDATE"}, []string{"configmaps", "secrets"},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{notOwn,
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"team-a", "team-b"}}, optOut}},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{optOut}}},
		{"annotation prefix and extra selectors", map[string]any{"ripple": map[string]any{"annotationPrefix": "ripple.example.com", "admission": map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"env": "prod"}, "matchExpressions": []any{map[string]any{"key": "tier", "operator": "Exists"}}},
			"objectSelector":    map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "In", "values": []any{"web"}}}},
		}}}, []admissionregistrationv1.OperationType{"UPDATE"}, []string{"configmaps", "secrets"},
			metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}, MatchExpressions: []metav1.LabelSelectorRequirement{notOwn,
				{Key: "ripple.example.com/admission", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"disabled"}},
				{Key: "tier", Operator: metav1.LabelSelectorOpExists}}},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "ripple.example.com/admission", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"disabled"}},
				{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{admissionValues(tc.values)}})
			wh := checkWebhook(t, objs, relName, relNS)
			if len(wh.Rules) != 1 {
				t.Fatalf("rules %+v, want one", wh.Rules)
			}
			rule := wh.Rules[0]
			if !slices.Equal(rule.Operations, tc.operations) || !slices.Equal(rule.Resources, tc.resources) ||
				!slices.Equal(rule.APIGroups, []string{""}) || !slices.Equal(rule.APIVersions, []string{"v1"}) || rule.Scope == nil || *rule.Scope != admissionregistrationv1.NamespacedScope {
				t.Errorf("rule %+v: want operations %v on %v, core v1, namespaced", rule, tc.operations, tc.resources)
			}
			if got := describeSelector(wh.NamespaceSelector); got != describeSelector(&tc.nsSel) {
				t.Errorf("namespaceSelector\n%s\nwant\n%s", got, describeSelector(&tc.nsSel))
			}
			if got := describeSelector(wh.ObjectSelector); got != describeSelector(&tc.objSel) {
				t.Errorf("objectSelector\n%s\nwant\n%s", got, describeSelector(&tc.objSel))
			}
			parseRendered(t, objs)
		})
	}
}

// describeSelector prints a label selector for comparison.
func describeSelector(s *metav1.LabelSelector) string {
	if s == nil {
		return "<none>"
	}
	return metav1.FormatLabelSelector(s) + " " + strings.Join(func() []string {
		var out []string
		for _, e := range s.MatchExpressions {
			out = append(out, e.String())
		}
		return out
	}(), "; ")
}

// TestAdmissionGeneratedCertificate: by default the chart generates a CA
// and a serving certificate for <fullname>-admission.<namespace>.svc into
// the kubernetes.io/tls Secret <fullname>-admission-tls, records its expiry
// on it, and the webhook trusts exactly that CA; the Deployment listens on
// the admission port with the arguments Ripple takes, mounts the Secret
// read-only at Ripple's default certificate directory, and the RBAC is the
// same as without the webhook.
func TestAdmissionGeneratedCertificate(t *testing.T) {
	const ns = "team-x"
	before := time.Now()
	_, objs := render(t, helmchart.Release{Name: "shop", Namespace: ns, Values: []map[string]any{admissionValues(map[string]any{"ripple": map[string]any{"admission": map[string]any{"port": 8443, "maxRollouts": 25}}})}})
	const fullname = "shop-reloader"
	wh := checkWebhook(t, objs, fullname, ns)

	s := renderedSecret(t, objs, fullname+"-admission-tls")
	if s == nil {
		t.Fatal("no Secret " + fullname + "-admission-tls")
	}
	if s.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type %q, want kubernetes.io/tls", s.Type)
	}
	if !bytes.Equal(wh.ClientConfig.CABundle, s.Data["ca.crt"]) {
		t.Errorf("the webhook's caBundle is not the Secret's ca.crt")
	}
	ca := parseCerts(t, wh.ClientConfig.CABundle)
	if len(ca) != 1 || !ca[0].IsCA {
		t.Fatalf("caBundle: %d certificates, want one CA", len(ca))
	}
	leaf := parseCerts(t, s.Data["tls.crt"])[0]
	host := fullname + "-admission." + ns + ".svc"
	pool := x509.NewCertPool()
	pool.AddCert(ca[0])
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the serving certificate does not verify for %s against the webhook's CA: %v (SANs %q)", host, err, leaf.DNSNames)
	}
	if block, _ := pem.Decode(s.Data["tls.key"]); block == nil || !strings.Contains(block.Type, "PRIVATE KEY") {
		t.Error("tls.key holds no PEM private key")
	}
	notAfter, err := time.Parse(time.RFC3339, s.Annotations["ripple.dev/not-after"])
	if err != nil {
		t.Fatalf("annotation ripple.dev/not-after: %v", err)
	}
	if notAfter.After(leaf.NotAfter) || leaf.NotAfter.Sub(notAfter) > time.Minute || notAfter.Before(before.Add(365*24*time.Hour-time.Minute)) {
		t.Errorf("recorded expiry %v, certificate's %v: want the certificate's (not later), 365 days on", notAfter, leaf.NotAfter)
	}

	d, c := rippleDeployment(t, objs)
	_, cfg := parseRendered(t, objs)
	if cfg.Admission != (config.Admission{Addr: ":8443", CertDir: config.DefaultAdmissionCertDir, MaxRollouts: 25}) {
		t.Errorf("Ripple's admission config %+v", cfg.Admission)
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "admission" && p.ContainerPort == 8443 }) {
		t.Errorf("ports %+v: want admission on 8443", c.Ports)
	}
	checkTLSMount(t, d, c, fullname+"-admission-tls")

	_, plain := render(t, helmchart.Release{Name: "shop", Namespace: ns})
	if a, b := describeRules(roles(objs)), describeRules(roles(plain)); !slices.Equal(a, b) {
		t.Errorf("the webhook changed the RBAC:\n%q\nwithout it:\n%q", a, b)
	}
	if webhookConfig(t, plain) != nil || renderedSecret(t, plain, fullname+"-admission-tls") != nil {
		t.Error("the chart's defaults render the webhook")
	}
	if _, c := rippleDeployment(t, plain); slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--admission") }) {
		t.Errorf("the chart's defaults pass %q", c.Args)
	}
}

// checkTLSMount checks that the Secret is mounted read-only at Ripple's
// default --admission-cert-dir.
func checkTLSMount(t *testing.T, dep *appsv1.Deployment, c corev1.Container, secret string) {
	t.Helper()
	vi := slices.IndexFunc(dep.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == secret })
	if vi < 0 {
		t.Fatalf("no volume of the Secret %s", secret)
	}
	name := dep.Spec.Template.Spec.Volumes[vi].Name
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == name && m.MountPath == config.DefaultAdmissionCertDir && m.ReadOnly
	}) {
		t.Errorf("volume %s is not mounted read-only at %s: %+v", name, config.DefaultAdmissionCertDir, c.VolumeMounts)
	}
}

// parseCerts parses every PEM certificate in data.
func parseCerts(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		t.Fatal("no PEM certificate")
	}
	return out
}

// TestAdmissionCertManager: with cert-manager the chart renders a
// Certificate for the Service's names into <fullname>-admission-tls (and a
// self-signed Issuer unless issuerRef names one), the webhook asks
// cert-manager to inject the CA, and the chart writes no Secret and no
// caBundle itself.
func TestAdmissionCertManager(t *testing.T) {
	for _, tc := range []struct {
		name       string
		issuerRef  map[string]any
		wantIssuer map[string]any
	}{
		{"self-signed", nil, map[string]any{"name": "ripple-admission-selfsigned", "kind": "Issuer", "group": "cert-manager.io"}},
		{"ClusterIssuer", map[string]any{"name": "corp-ca", "kind": "ClusterIssuer"}, map[string]any{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cm := map[string]any{"enabled": true}
			if tc.issuerRef != nil {
				cm["issuerRef"] = tc.issuerRef
			}
			_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{admissionValues(admissionCM(cm))}})
			wh := checkWebhook(t, objs, relName, relNS)
			if len(wh.ClientConfig.CABundle) != 0 {
				t.Error("the chart sets a caBundle; cert-manager injects it")
			}
			w := webhookConfig(t, objs)
			if got := w.Annotations["cert-manager.io/inject-ca-from"]; got != relNS+"/ripple-admission" {
				t.Errorf("cert-manager.io/inject-ca-from %q, want %s/ripple-admission", got, relNS)
			}
			if renderedSecret(t, objs, "ripple-admission-tls") != nil {
				t.Error("the chart renders the Secret cert-manager writes")
			}
			certs := find(objs, "Certificate")
			if len(certs) != 1 || certs[0].GetName() != "ripple-admission" {
				t.Fatalf("want one Certificate ripple-admission, got %d", len(certs))
			}
			spec, _, _ := unstructured.NestedMap(certs[0].Object, "spec")
			dns, _, _ := unstructured.NestedStringSlice(spec, "dnsNames")
			if spec["secretName"] != "ripple-admission-tls" || !slices.Contains(dns, "ripple-admission."+relNS+".svc") || spec["duration"] != "8760h" || spec["renewBefore"] != "720h" {
				t.Errorf("Certificate spec %v", spec)
			}
			issuerRef, _, _ := unstructured.NestedMap(spec, "issuerRef")
			if describe(issuerRef) != describe(tc.wantIssuer) {
				t.Errorf("issuerRef %v, want %v", issuerRef, tc.wantIssuer)
			}
			issuers := find(objs, "Issuer")
			if tc.issuerRef == nil {
				if len(issuers) != 1 || issuers[0].GetName() != "ripple-admission-selfsigned" {
					t.Errorf("want the self-signed Issuer, got %d Issuers", len(issuers))
				}
			} else if len(issuers) != 0 {
				t.Error("an Issuer is rendered although issuerRef names one")
			}
			d, c := rippleDeployment(t, objs)
			checkTLSMount(t, d, c, "ripple-admission-tls")
			parseRendered(t, objs)
		})
	}
}

func describe(m map[string]any) string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v.(string))
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// TestAdmissionOwnSecret: with certificate.secretName and caBundle the
// chart mounts that Secret, trusts that CA, and makes no certificate.
func TestAdmissionOwnSecret(t *testing.T) {
	// Any PEM certificate will do: one the chart generates.
	_, gen := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{admissionValues(nil)}})
	caPEM := string(renderedSecret(t, gen, "ripple-admission-tls").Data["ca.crt"])
	_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{admissionValues(map[string]any{"ripple": map[string]any{"admission": map[string]any{
		"certificate": map[string]any{"secretName": "my-webhook-tls", "caBundle": caPEM}}}})}})
	wh := checkWebhook(t, objs, relName, relNS)
	if string(wh.ClientConfig.CABundle) != caPEM {
		t.Errorf("caBundle %q, want the value's PEM", wh.ClientConfig.CABundle)
	}
	if len(find(objs, "Secret")) != 0 || len(find(objs, "Certificate")) != 0 || len(find(objs, "Issuer")) != 0 {
		t.Error("the chart makes a certificate although one is given")
	}
	d, c := rippleDeployment(t, objs)
	checkTLSMount(t, d, c, "my-webhook-tls")
	if w := webhookConfig(t, objs); w.Annotations["cert-manager.io/inject-ca-from"] != "" {
		t.Error("cert-manager injection without cert-manager")
	}
}

// TestAdmissionInstall installs the chart with the webhook on the real API
// server, as `helm install` and `helm upgrade` do (lookup reads the
// cluster there): the API server accepts the webhook configuration, a
// ConfigMap write goes through promptly with no Ripple to answer
// (failurePolicy Ignore), an upgrade keeps the certificate, an upgrade
// within renewBeforeDays of the recorded expiry makes a new one and trusts
// both CAs, and uninstalling removes the webhook.
func TestAdmissionInstall(t *testing.T) {
	t.Parallel()
	chart, err := helmchart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(api.Config)
	ns := kit.NewNamespace(t, cs, "admission-", nil)
	// The webhook sees only this test's tenant namespace: the API server is
	// shared with the other tests.
	tenant := kit.NewNamespace(t, cs, "admission-tenant-", map[string]string{"admission-test": ns})
	env := []string{"KUBECONFIG=" + api.Kubeconfig}
	helm := func(args ...string) string {
		t.Helper()
		out, err := helmchart.HelmEnv(env, onShared(append(args, "--namespace", ns))...)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	set := []string{"--set", "ripple.admission.enabled=true", "--set", "ripple.admission.namespaceSelector.matchLabels.admission-test=" + ns}
	// A name of its own: the webhook configuration is cluster-wide.
	const fullname = "ripple-adm"
	out := helm(append([]string{"install", fullname, chart}, set...)...)
	if !strings.Contains(out, "Admission webhook:") || !strings.Contains(out, "Upgrade at least every 335 days") {
		t.Errorf("install notes do not mention the webhook:\n%s", out)
	}
	secret := func() *corev1.Secret {
		t.Helper()
		s, err := cs.CoreV1().Secrets(ns).Get(t.Context(), fullname+"-admission-tls", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	caBundle := func() []byte {
		t.Helper()
		w, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), fullname, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return w.Webhooks[0].ClientConfig.CABundle
	}
	first := secret()
	if !bytes.Equal(caBundle(), first.Data["ca.crt"]) {
		t.Fatal("the installed webhook does not trust the Secret's CA")
	}

	// No Ripple runs: the write goes through within the webhook's timeout.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: tenant}, Data: map[string]string{"k": "1"}}
	if _, err := cs.CoreV1().ConfigMaps(tenant).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "2"
	start := time.Now()
	if _, err := cs.CoreV1().ConfigMaps(tenant).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("with Ripple down, a ConfigMap update fails: %v", err)
	}
	took := time.Since(start)
	t.Logf("with Ripple down, a ConfigMap update took %v", took)
	if took > 3*time.Second {
		t.Errorf("with Ripple down, a ConfigMap update took %v; the webhook's timeout is 2s", took)
	}

	helm(append([]string{"upgrade", fullname, chart}, set...)...)
	kept := secret()
	if !bytes.Equal(kept.Data["tls.crt"], first.Data["tls.crt"]) || kept.Annotations["ripple.dev/not-after"] != first.Annotations["ripple.dev/not-after"] {
		t.Fatal("an upgrade far from the expiry made a new certificate")
	}
	if !bytes.Equal(caBundle(), first.Data["ca.crt"]) {
		t.Fatal("after the upgrade, the webhook does not trust the kept CA")
	}

	// As if the certificate expired in 10 days (renewBeforeDays is 30).
	kept.Annotations["ripple.dev/not-after"] = time.Now().Add(10 * 24 * time.Hour).UTC().Format(time.RFC3339)
	if _, err := cs.CoreV1().Secrets(ns).Update(t.Context(), kept, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	helm(append([]string{"upgrade", fullname, chart}, set...)...)
	renewed := secret()
	if bytes.Equal(renewed.Data["tls.crt"], first.Data["tls.crt"]) || bytes.Equal(renewed.Data["ca.crt"], first.Data["ca.crt"]) {
		t.Fatal("an upgrade within renewBeforeDays kept the certificate")
	}
	if na, err := time.Parse(time.RFC3339, renewed.Annotations["ripple.dev/not-after"]); err != nil || time.Until(na) < 364*24*time.Hour {
		t.Errorf("renewed certificate's recorded expiry %q (%v), want a year on", renewed.Annotations["ripple.dev/not-after"], err)
	}
	bundle := parseCerts(t, caBundle())
	newCA, oldCA := parseCerts(t, renewed.Data["ca.crt"])[0], parseCerts(t, first.Data["ca.crt"])[0]
	if len(bundle) != 2 || !bundle[0].Equal(newCA) || !bundle[1].Equal(oldCA) {
		t.Errorf("after a renewal the webhook trusts %d CAs; want the new one and the old one (Ripple serves the old certificate until the kubelet updates the Secret)", len(bundle))
	}
	// The next upgrade trusts the new CA alone.
	helm(append([]string{"upgrade", fullname, chart}, set...)...)
	if got := parseCerts(t, caBundle()); len(got) != 1 || !got[0].Equal(newCA) {
		t.Errorf("the upgrade after a renewal trusts %d CAs, want the new one alone", len(got))
	}

	helm("uninstall", fullname)
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, fullname, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("the webhook configuration outlived the release: %v", err)
	}
}

// TestAdmissionShards: with ripple.shards every shard's Deployment serves
// the webhook (each caches every namespace), behind one Service and one
// webhook configuration.
func TestAdmissionShards(t *testing.T) {
	_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{admissionValues(map[string]any{"ripple": map[string]any{"shards": 3}})}})
	checkWebhook(t, objs, relName, relNS)
	deps := find(objs, "Deployment")
	if len(deps) != 3 {
		t.Fatalf("%d Deployments, want 3", len(deps))
	}
	for _, o := range deps {
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
			t.Fatal(err)
		}
		c := d.Spec.Template.Spec.Containers[0]
		if !slices.Contains(c.Args, "--admission-bind-address=:9443") || !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "admission" }) {
			t.Errorf("%s: args %q, ports %+v: want the webhook served", d.Name, c.Args, c.Ports)
		}
		checkTLSMount(t, d, c, "ripple-admission-tls")
	}
	var services []string
	for _, o := range find(objs, "Service") {
		services = append(services, o.GetName())
	}
	if !slices.Equal(services, []string{"ripple-admission"}) {
		t.Errorf("Services %q, want one ripple-admission", services)
	}
}

// TestAdmissionClientCA: ripple.admission.clientCA is kept in the
// ConfigMap <fullname>-admission-client-ca, mounted read-only and passed
// as --admission-client-ca, whose file Ripple's webhook takes; a new CA
// rolls the pods (Ripple reads it at start). With the NetworkPolicy,
// ripple.admission.from limits who reaches the port, which is open to
// anyone without it; the API server accepts both policies.
func TestAdmissionClientCA(t *testing.T) {
	ensureNamespace(t, kubernetes.NewForConfigOrDie(api.Config), relNS, nil)
	_, gen := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{admissionValues(nil)}})
	caPEM := string(renderedSecret(t, gen, "ripple-admission-tls").Data["ca.crt"])
	netpol := r(map[string]any{"netpol": map[string]any{"enabled": true}})
	controlPlane := []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.10/32"}}}
	values := func(ca string, from []any) map[string]any {
		return admissionValues(deepMerge(netpol, map[string]any{"ripple": map[string]any{"admission": map[string]any{"clientCA": ca, "from": from}}}))
	}
	_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{values(caPEM, controlPlane)}})
	_, cfg := parseRendered(t, objs)
	var cm *unstructured.Unstructured
	for _, o := range find(objs, "ConfigMap") {
		if o.GetName() == relName+"-admission-client-ca" {
			cm = o
		}
	}
	if cm == nil {
		t.Fatal("no ConfigMap of the client CA")
	}
	pemFile, _, _ := unstructured.NestedString(cm.Object, "data", "ca.crt")
	d, c := rippleDeployment(t, objs)
	vi := slices.IndexFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.ConfigMap != nil && v.ConfigMap.Name == cm.GetName() })
	if vi < 0 {
		t.Fatalf("no volume of the ConfigMap %s", cm.GetName())
	}
	mi := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == d.Spec.Template.Spec.Volumes[vi].Name && m.ReadOnly })
	if mi < 0 || cfg.Admission.ClientCA != c.VolumeMounts[mi].MountPath+"/ca.crt" {
		t.Fatalf("--admission-client-ca %q is not ca.crt of the ConfigMap's read-only mount (%+v)", cfg.Admission.ClientCA, c.VolumeMounts)
	}
	file := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(file, []byte(pemFile), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := admission.ClientAuth(file); err != nil {
		t.Errorf("Ripple does not take the rendered CA: %v", err)
	}
	sum := d.Spec.Template.Annotations["checksum/admission-client-ca"]
	_, other := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{values(string(renderedSecret(t, gen, "ripple-admission-tls").Data["tls.crt"]), nil)}})
	if d2, _ := rippleDeployment(t, other); sum == "" || d2.Spec.Template.Annotations["checksum/admission-client-ca"] == sum {
		t.Errorf("checksum/admission-client-ca %q does not change with the CA", sum)
	}
	for _, tc := range []struct {
		name string
		objs []*unstructured.Unstructured
		from []any
	}{{"from the control plane", objs, controlPlane}, {"from anywhere", other, nil}} {
		nps := find(tc.objs, "NetworkPolicy")
		if len(nps) != 1 {
			t.Fatalf("%s: %d NetworkPolicies, want 1", tc.name, len(nps))
		}
		ingress, _, _ := unstructured.NestedSlice(nps[0].Object, "spec", "ingress")
		i := slices.IndexFunc(ingress, func(rule any) bool {
			ports, _ := rule.(map[string]any)["ports"].([]any)
			return len(ports) == 1 && ports[0].(map[string]any)["port"] == "admission"
		})
		if i < 0 {
			t.Fatalf("%s: no ingress rule of the admission port: %v", tc.name, ingress)
		}
		from, _ := ingress[i].(map[string]any)["from"].([]any)
		if !reflect.DeepEqual(from, tc.from) {
			t.Errorf("%s: the admission port is open from %v, want %v", tc.name, from, tc.from)
		}
		if err := newApplier(t, api.Config).apply(t.Context(), nps[0], true); err != nil {
			t.Errorf("%s: the API server rejects the NetworkPolicy: %v", tc.name, err)
		}
	}
}
