package main

// Run is the JSON document a run writes.
type Run struct {
	Started    string   `json:"started"`
	Command    string   `json:"command"`
	Set        string   `json:"set"` // "quick" or "default"
	Controller []string `json:"controller"`
	// ControllerVersion is what `{ripple} version` printed, when the
	// controller command runs the ripple binary.
	ControllerVersion string   `json:"controller_version,omitempty"`
	Proxy             bool     `json:"proxy"`
	Machine           Machine  `json:"machine"`
	DurationS         float64  `json:"duration_s"`
	Results           []Result `json:"results"`
	Targets           []Target `json:"targets"`
	// MemoryModel is fitted across the scenarios; nil when they do not
	// determine it (e.g. a single scenario).
	MemoryModel *MemoryModel `json:"memory_model,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	CPUs      int    `json:"cpus"`
	MemoryGiB int    `json:"memory_gib"`
	CPUModel  string `json:"cpu_model"`
	GoVersion string `json:"go_version"`
	// LoadBefore and LoadAfter are the 1-minute load averages when the run
	// started and ended: other work on the machine makes numbers noisy.
	// BenchRSSPeak is the benchmark process's own peak RSS: its watch,
	// proxy and object creation must stay small next to what it measures.
	BenchRSSPeak float64 `json:"bench_rss_peak_bytes"`
	LoadBefore   float64 `json:"load_before"`
	LoadAfter    float64 `json:"load_after"`
}

// Result is one scenario at one scale.
type Result struct {
	Name         string   `json:"name"`
	Scenario     string   `json:"scenario"`
	Description  string   `json:"description"`
	ControlPlane string   `json:"control_plane"` // api, cluster or external
	Flags        []string `json:"controller_flags"`
	// AddedFlags are what the benchmark added to the scenario's flags:
	// --max-concurrent-rollouts=0 on the API-only control plane, where no
	// rollout completes, and --controller-flags.
	AddedFlags []string `json:"added_controller_flags,omitempty"`
	Scale      Scale    `json:"scale"`
	SetupS     float64  `json:"setup_s"` // creating the objects
	DurationS  float64  `json:"duration_s"`

	Startup Startup `json:"startup"`
	// MeasureStartS is when the measurement began, in seconds since the
	// controller started (the time base of the logs' memory CSV).
	MeasureStartS float64  `json:"measure_start_s"`
	Restart       *Startup `json:"restart,omitempty"`

	ChangeSets int `json:"change_sets"`
	Updates    int `json:"updates"`
	// Latency is from each change set's last acknowledged update to each
	// affected workload's template change seen on a watch.
	Latency Latency `json:"latency"`
	// AllPatched is, per change set, the time until its last workload was
	// seen changed.
	AllPatched Latency `json:"all_patched"`
	// FirstPatch is, per change set, the time until the API server
	// acknowledged the controller's first PATCH of a workload.
	FirstPatch Latency `json:"first_patch"`
	// LastPatch is, per change set, the time until the API server
	// acknowledged the controller's last PATCH of one of its workloads:
	// the change fully accepted, before any watch has seen it.
	LastPatch Latency `json:"last_patch"`
	// PatchRate is the fastest rate, across change sets, at which the
	// controller's workload PATCHes were acknowledged (per second).
	PatchRate float64 `json:"patch_rate_per_s"`

	Patches         PatchCount `json:"patches"`
	PatchAttempts   int        `json:"patch_attempts"`   // including conflicts and errors
	TemplateChanges int        `json:"template_changes"` // seen on the watch
	// NewReplicaSets and RolloutsPerChangeSet are measured on the full
	// cluster only (-1 otherwise).
	NewReplicaSets       int     `json:"new_replicasets"`
	RolloutsPerChangeSet float64 `json:"rollouts_per_change_set"`

	// Requests are the controller's API requests during the measurement,
	// by "verb resource", as the proxy saw them.
	Requests      map[string]int `json:"requests,omitempty"`
	RequestsTotal int            `json:"requests_total"`
	// RestClient are the deltas of the controller's own
	// rest_client_requests_total during the measurement, by "METHOD code".
	RestClient map[string]int `json:"rest_client_requests,omitempty"`
	Reconciles int            `json:"reconciles"` // controller_runtime_reconcile_total delta; -1 if not exposed
	// WorkloadLists counts LIST and WatchList requests for workload kinds
	// from the moment the controller was ready to the end.
	WorkloadLists int `json:"workload_lists_after_start"`
	Edits         int `json:"metadata_edits,omitempty"`
	ForcedRelists int `json:"forced_relists,omitempty"`
	ConfigRelists int `json:"config_relists,omitempty"`

	// Floor is set by the fan-out with default flags: the API server's own
	// time for the same writes (floor.go).
	Floor *Floor `json:"floor,omitempty"`

	// Safety is set by the waves and storm scenarios.
	Safety *Safety `json:"safety,omitempty"`

	Memory Memory `json:"memory"`
	CPU    CPU    `json:"cpu"`
	Errors Errors `json:"errors"`
}

// Scale is the size of a scenario.
type Scale struct {
	Namespaces  int `json:"namespaces"`
	Workloads   int `json:"workloads"`
	ConfigMaps  int `json:"configmaps"`
	Secrets     int `json:"secrets"`
	ConfigBytes int `json:"config_bytes"` // payload per config
}

// Objects is the number of objects a controller caches.
func (s Scale) Objects() int { return s.Workloads + s.ConfigMaps + s.Secrets }

// Startup is a controller start.
type Startup struct {
	ReadyS float64 `json:"ready_s"` // process start to /readyz
	// RequestsToReady are the requests until ready, by "verb resource".
	RequestsToReady map[string]int `json:"requests_to_ready,omitempty"`
	// BaselineS is from ready until every workload carried the baseline
	// annotation; RequestsToBaseline are the requests in that time.
	BaselineS          float64        `json:"baseline_s"`
	RequestsToBaseline map[string]int `json:"requests_to_baseline,omitempty"`
	// PatchesAfter and TemplateChangesAfter count workload PATCHes and
	// template changes in the quiet period after a restart: a controller
	// that restarts cleanly rolls nothing.
	PatchesAfter         int `json:"patches_after"`
	TemplateChangesAfter int `json:"template_changes_after"`
	// FirstReload is a reload asked for right after ready (cold start and
	// restart); nil when the scenario does not ask for one.
	FirstReload *FirstReload `json:"first_reload,omitempty"`
}

// FirstReload is one config, used by one workload, changed right after
// the controller turned ready, before it had written every baseline.
type FirstReload struct {
	Workload string `json:"workload"`
	// Ms is from the change's acknowledgement to the workload's template
	// change seen on the watch.
	Ms float64 `json:"ms"`
	// Missed is true when the template did not change within TimeoutS.
	Missed   bool    `json:"missed"`
	TimeoutS float64 `json:"timeout_s"`
}

// Memory is the controller's memory in bytes.
type Memory struct {
	RSSPeak    float64 `json:"rss_peak_bytes"`
	RSSSteady  float64 `json:"rss_steady_bytes"`
	HeapPeak   float64 `json:"heap_inuse_peak_bytes"`
	HeapSteady float64 `json:"heap_inuse_steady_bytes"`
	// HeapAfterSync is the heap once the caches are synced and every
	// workload baselined, before the measurement: the cost of the cache.
	HeapAfterSync float64 `json:"heap_inuse_after_sync_bytes"`
	RSSAfterSync  float64 `json:"rss_after_sync_bytes"`
	// Live* are go_gc_heap_live_bytes: what the last GC found reachable.
	LiveAfterSync float64 `json:"heap_live_after_sync_bytes"`
	LiveSteady    float64 `json:"heap_live_steady_bytes"`
	LivePeak      float64 `json:"heap_live_peak_bytes"`
}

// CPU is the controller's CPU time in seconds.
type CPU struct {
	Total   float64 `json:"total_s"`
	Measure float64 `json:"measure_s"`
}

// Errors are what went wrong.
type Errors struct {
	// Missed counts affected workloads never seen changing.
	Missed int `json:"missed"`
	// FailedRequests counts the controller's error responses (4xx, 5xx)
	// other than conflicts; Conflicts counts 409s.
	FailedRequests int `json:"failed_requests"`
	Conflicts      int `json:"conflicts"`
	// LogErrors counts error-level lines in the controller's log.
	LogErrors int `json:"log_errors"`
	// Failure is why the scenario could not finish, if it could not.
	Failure string   `json:"failure,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// Target is one acceptance target and whether the run met it.
type Target struct {
	Name     string `json:"name"`
	Want     string `json:"want"`
	Measured string `json:"measured"`
	Status   string `json:"status"` // PASS, FAIL or n/a
	Note     string `json:"note,omitempty"`
}
