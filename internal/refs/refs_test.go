package refs

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Builders keep the tables readable: each case shows only what it is about.

func container(name string, opts ...func(*corev1.Container)) corev1.Container {
	c := corev1.Container{Name: name}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func mounts(volume string) func(*corev1.Container) {
	return func(c *corev1.Container) {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: "/" + volume})
	}
}

func envCM(name string) func(*corev1.Container) {
	return func(c *corev1.Container) {
		c.Env = append(c.Env, corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"},
		}})
	}
}

func envSecret(name string) func(*corev1.Container) {
	return func(c *corev1.Container) {
		c.Env = append(c.Env, corev1.EnvVar{Name: "Y", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"},
		}})
	}
}

func envFromCM(name string) func(*corev1.Container) {
	return func(c *corev1.Container) {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
	}
}

func envFromSecret(name string) func(*corev1.Container) {
	return func(c *corev1.Container) {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
	}
}

func plainEnv(c *corev1.Container) {
	c.Env = append(c.Env, corev1.EnvVar{Name: "PLAIN", Value: "app-cfg"})
}

func cmVolume(vol, name string) corev1.Volume {
	return corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}},
	}}
}

func secretVolume(vol, name string) corev1.Volume {
	return corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: name},
	}}
}

func projectedVolume(vol string, sources ...corev1.VolumeProjection) corev1.Volume {
	return corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{Sources: sources},
	}}
}

func projCM(name string) corev1.VolumeProjection {
	return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
}

func projSecret(name string) corev1.VolumeProjection {
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
}

func csiVolume(vol, spc string) corev1.Volume {
	return corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{
		CSI: &corev1.CSIVolumeSource{Driver: "secrets-store.csi.k8s.io", VolumeAttributes: map[string]string{"secretProviderClass": spc}},
	}}
}

var (
	cfg = Ref{Kind: ConfigMap, Name: "app-cfg"}
	sec = Ref{Kind: Secret, Name: "app-secret"}
	spc = Ref{Kind: SecretProviderClass, Name: "vault"}
)

func TestTarget(t *testing.T) {
	tests := map[string]struct {
		spec           *corev1.PodSpec
		ref            Ref
		wantContainer  string
		wantReferenced bool
	}{
		"nil spec": {
			spec: nil, ref: cfg,
		},
		"empty spec": {
			spec: &corev1.PodSpec{}, ref: cfg,
		},
		"configMap volume mounted by second container": {
			spec: &corev1.PodSpec{
				Volumes:    []corev1.Volume{cmVolume("cfg", "app-cfg")},
				Containers: []corev1.Container{container("app"), container("sidecar", mounts("cfg"))},
			},
			ref: cfg, wantContainer: "sidecar", wantReferenced: true,
		},
		"secret volume": {
			spec: &corev1.PodSpec{
				Volumes:    []corev1.Volume{secretVolume("s", "app-secret")},
				Containers: []corev1.Container{container("app"), container("sidecar", mounts("s"))},
			},
			ref: sec, wantContainer: "sidecar", wantReferenced: true,
		},
		"secret volume does not match configMap of same name": {
			spec: &corev1.PodSpec{
				Volumes:    []corev1.Volume{secretVolume("s", "app-cfg")},
				Containers: []corev1.Container{container("app"), container("sidecar", mounts("s"))},
			},
			ref: cfg, wantContainer: "app", wantReferenced: false,
		},
		"projected configMap": {
			spec: &corev1.PodSpec{
				Volumes:    []corev1.Volume{projectedVolume("p", projSecret("other"), projCM("app-cfg"))},
				Containers: []corev1.Container{container("app"), container("sidecar", mounts("p"))},
			},
			ref: cfg, wantContainer: "sidecar", wantReferenced: true,
		},
		"projected secret": {
			spec: &corev1.PodSpec{
				Volumes:    []corev1.Volume{projectedVolume("p", projCM("other"), projSecret("app-secret"))},
				Containers: []corev1.Container{container("app"), container("sidecar", mounts("p"))},
			},
			ref: sec, wantContainer: "sidecar", wantReferenced: true,
		},
		"csi secretProviderClass": {
			spec: &corev1.PodSpec{
				Volumes:    []corev1.Volume{csiVolume("v", "vault")},
				Containers: []corev1.Container{container("app"), container("sidecar", mounts("v"))},
			},
			ref: spc, wantContainer: "sidecar", wantReferenced: true,
		},
		"volume mounted only by init container goes to container 0": {
			spec: &corev1.PodSpec{
				Volumes:        []corev1.Volume{cmVolume("cfg", "app-cfg")},
				InitContainers: []corev1.Container{container("init", mounts("cfg"))},
				Containers:     []corev1.Container{container("app"), container("sidecar")},
			},
			ref: cfg, wantContainer: "app", wantReferenced: true,
		},
		"regular mount wins over init mount": {
			spec: &corev1.PodSpec{
				Volumes:        []corev1.Volume{cmVolume("cfg", "app-cfg")},
				InitContainers: []corev1.Container{container("init", mounts("cfg"))},
				Containers:     []corev1.Container{container("app"), container("sidecar", mounts("cfg"))},
			},
			ref: cfg, wantContainer: "sidecar", wantReferenced: true,
		},
		"volume mount wins over env reference in earlier container": {
			spec: &corev1.PodSpec{
				Volumes:    []corev1.Volume{cmVolume("cfg", "app-cfg")},
				Containers: []corev1.Container{container("app", envCM("app-cfg")), container("sidecar", mounts("cfg"))},
			},
			ref: cfg, wantContainer: "sidecar", wantReferenced: true,
		},
		"unmounted volume falls through to env": {
			spec: &corev1.PodSpec{
				Volumes:    []corev1.Volume{cmVolume("cfg", "app-cfg")},
				Containers: []corev1.Container{container("app"), container("sidecar", envCM("app-cfg"))},
			},
			ref: cfg, wantContainer: "sidecar", wantReferenced: true,
		},
		"unmounted volume and no env is not referenced": {
			spec: &corev1.PodSpec{
				Volumes:    []corev1.Volume{cmVolume("cfg", "app-cfg")},
				Containers: []corev1.Container{container("app"), container("sidecar")},
			},
			ref: cfg, wantContainer: "app", wantReferenced: false,
		},
		"only the first matching volume counts": {
			spec: &corev1.PodSpec{
				Volumes:    []corev1.Volume{cmVolume("unused", "app-cfg"), cmVolume("used", "app-cfg")},
				Containers: []corev1.Container{container("app"), container("sidecar", mounts("used"))},
			},
			ref: cfg, wantContainer: "app", wantReferenced: false,
		},
		"env valueFrom configMapKeyRef": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{container("app", plainEnv), container("sidecar", envCM("app-cfg"))},
			},
			ref: cfg, wantContainer: "sidecar", wantReferenced: true,
		},
		"env valueFrom secretKeyRef": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{container("app", envCM("app-secret")), container("sidecar", envSecret("app-secret"))},
			},
			ref: sec, wantContainer: "sidecar", wantReferenced: true,
		},
		"envFrom configMapRef": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{container("app"), container("sidecar", envFromCM("app-cfg"))},
			},
			ref: cfg, wantContainer: "sidecar", wantReferenced: true,
		},
		"envFrom secretRef": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{container("app"), container("sidecar", envFromSecret("app-secret"))},
			},
			ref: sec, wantContainer: "sidecar", wantReferenced: true,
		},
		"first referencing container wins": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{container("app"), container("b", envFromCM("app-cfg")), container("c", envCM("app-cfg"))},
			},
			ref: cfg, wantContainer: "b", wantReferenced: true,
		},
		"init container env goes to container 0": {
			spec: &corev1.PodSpec{
				InitContainers: []corev1.Container{container("init", envSecret("app-secret"))},
				Containers:     []corev1.Container{container("app"), container("sidecar")},
			},
			ref: sec, wantContainer: "app", wantReferenced: true,
		},
		"init container envFrom goes to container 0": {
			spec: &corev1.PodSpec{
				InitContainers: []corev1.Container{container("init", envFromCM("app-cfg"))},
				Containers:     []corev1.Container{container("app"), container("sidecar")},
			},
			ref: cfg, wantContainer: "app", wantReferenced: true,
		},
		"regular env wins over init env": {
			spec: &corev1.PodSpec{
				InitContainers: []corev1.Container{container("init", envFromCM("app-cfg"))},
				Containers:     []corev1.Container{container("app"), container("sidecar", envFromCM("app-cfg"))},
			},
			ref: cfg, wantContainer: "sidecar", wantReferenced: true,
		},
		"secretProviderClass name in env is not a reference": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{container("app"), container("sidecar", envFromSecret("vault"), envFromCM("vault"))},
			},
			ref: spc, wantContainer: "app", wantReferenced: false,
		},
		"not referenced falls back to container 0": {
			spec: &corev1.PodSpec{
				Volumes:    []corev1.Volume{cmVolume("cfg", "other")},
				Containers: []corev1.Container{container("app", plainEnv, mounts("cfg")), container("sidecar", envFromCM("other"))},
			},
			ref: cfg, wantContainer: "app", wantReferenced: false,
		},
		"imagePullSecrets is not a reference": {
			spec: &corev1.PodSpec{
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "app-secret"}},
				Containers:       []corev1.Container{container("app"), container("sidecar")},
			},
			ref: sec, wantContainer: "app", wantReferenced: false,
		},
		"ephemeral containers are not inspected": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{container("app")},
				EphemeralContainers: []corev1.EphemeralContainer{{
					EphemeralContainerCommon: corev1.EphemeralContainerCommon(container("debug", envFromCM("app-cfg"))),
				}},
			},
			ref: cfg, wantContainer: "app", wantReferenced: false,
		},
		"no containers": {
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{cmVolume("cfg", "app-cfg")}},
			ref:  cfg,
		},
		"init volume mount without regular containers": {
			spec: &corev1.PodSpec{
				Volumes:        []corev1.Volume{cmVolume("cfg", "app-cfg")},
				InitContainers: []corev1.Container{container("init", mounts("cfg"))},
			},
			ref: cfg,
		},
		"init env without regular containers": {
			spec: &corev1.PodSpec{
				InitContainers: []corev1.Container{container("init", envFromCM("app-cfg"))},
			},
			ref: cfg,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gotContainer, gotReferenced := Target(tc.spec, tc.ref)
			if gotContainer != tc.wantContainer || gotReferenced != tc.wantReferenced {
				t.Errorf("Target(%s) = (%q, %t), want (%q, %t)", tc.ref, gotContainer, gotReferenced, tc.wantContainer, tc.wantReferenced)
			}
		})
	}
}

func TestAll(t *testing.T) {
	tests := map[string]struct {
		spec *corev1.PodSpec
		want []Ref
	}{
		"nil spec":   {spec: nil, want: nil},
		"empty spec": {spec: &corev1.PodSpec{}, want: nil},
		"every source kind, sorted and de-duplicated": {
			spec: &corev1.PodSpec{
				Volumes: []corev1.Volume{
					csiVolume("v", "vault"),
					secretVolume("s", "tls"),
					projectedVolume("p", projCM("b-cfg"), projSecret("creds")),
					cmVolume("unmounted", "a-cfg"),
					cmVolume("again", "b-cfg"),
					{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				},
				InitContainers: []corev1.Container{container("init", envSecret("init-secret"), envFromCM("init-cfg"))},
				Containers: []corev1.Container{
					container("app", plainEnv, envCM("env-cfg"), envFromSecret("creds")),
					container("sidecar", envSecret("env-secret"), envFromCM("a-cfg")),
				},
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
			},
			want: []Ref{
				{ConfigMap, "a-cfg"},
				{ConfigMap, "b-cfg"},
				{ConfigMap, "env-cfg"},
				{ConfigMap, "init-cfg"},
				{Secret, "creds"},
				{Secret, "env-secret"},
				{Secret, "init-secret"},
				{Secret, "tls"},
				{SecretProviderClass, "vault"},
			},
		},
		"empty names and csi without the attribute are ignored": {
			spec: &corev1.PodSpec{
				Volumes: []corev1.Volume{
					cmVolume("cfg", ""),
					{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "other.csi"}}},
				},
				Containers: []corev1.Container{container("app", envFromCM(""))},
			},
			want: nil,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := All(tc.spec)
			if !slices.Equal(got, tc.want) {
				t.Errorf("All() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestKindType(t *testing.T) {
	tests := map[Kind]string{
		ConfigMap:           "CONFIGMAP",
		Secret:              "SECRET",
		SecretProviderClass: "SECRETPROVIDERCLASS",
	}
	for k, want := range tests {
		t.Run(string(k), func(t *testing.T) {
			if got := k.Type(); got != want {
				t.Errorf("Type() = %q, want %q", got, want)
			}
		})
	}
}

func TestRefString(t *testing.T) {
	tests := map[string]struct {
		ref  Ref
		want string
	}{
		"configMap": {ref: cfg, want: "ConfigMap/app-cfg"},
		"secret":    {ref: sec, want: "Secret/app-secret"},
		"spc":       {ref: spc, want: "SecretProviderClass/vault"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.ref.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}
