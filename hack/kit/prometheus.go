package kit

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/util/teststorage"
)

// Prometheus is Prometheus' own PromQL engine and TSDB behind the
// instant-query endpoint of its HTTP API (/api/v1/query), on 127.0.0.1,
// fed with series the test sets: what the canary's query gate asks,
// answered as Prometheus answers it.
type Prometheus struct {
	t       testing.TB
	URL     string
	storage *teststorage.TestStorage
	engine  *promql.Engine

	mu    sync.Mutex
	asked []string
}

// NewPrometheus starts a Prometheus stand-in, stopped when t ends.
func NewPrometheus(t testing.TB) *Prometheus {
	t.Helper()
	p := &Prometheus{t: t, storage: teststorage.New(t),
		engine: promql.NewEngine(promql.EngineOpts{MaxSamples: 100000, Timeout: 10 * time.Second, LookbackDelta: 5 * time.Minute})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(p.query), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	p.URL = "http://" + l.Addr().String()
	return p
}

// Set writes the value of series (name and labels) now.
func (p *Prometheus) Set(value float64, name string, kv ...string) {
	p.t.Helper()
	app := p.storage.Appender(p.t.Context())
	if _, err := app.Append(0, labels.FromStrings(append([]string{model.MetricNameLabel, name}, kv...)...), time.Now().UnixMilli(), value); err != nil {
		p.t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		p.t.Fatal(err)
	}
}

// Queries are the queries Ripple asked.
func (p *Prometheus) Queries() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

// query answers /api/v1/query as Prometheus does: the value of the query
// at the time asked (now, if none), in the API's JSON.
func (p *Prometheus) query(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query" {
		http.NotFound(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		writeProm(w, http.StatusBadRequest, nil, err)
		return
	}
	qs, ts := r.Form.Get("query"), time.Now()
	if s := r.Form.Get("time"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			writeProm(w, http.StatusBadRequest, nil, err)
			return
		}
		ts = time.UnixMilli(int64(f * 1000))
	}
	p.mu.Lock()
	p.asked = append(p.asked, qs)
	p.mu.Unlock()
	q, err := p.engine.NewInstantQuery(r.Context(), p.storage, nil, qs, ts)
	if err != nil {
		writeProm(w, http.StatusBadRequest, nil, err)
		return
	}
	defer q.Close()
	res := q.Exec(r.Context())
	if res.Err != nil {
		writeProm(w, http.StatusUnprocessableEntity, nil, res.Err)
		return
	}
	var v model.Value
	switch rv := res.Value.(type) {
	case promql.Scalar:
		v = &model.Scalar{Timestamp: model.Time(rv.T), Value: model.SampleValue(rv.V)}
	case promql.Vector:
		vec := model.Vector{}
		for _, s := range rv {
			m := model.Metric{}
			s.Metric.Range(func(l labels.Label) { m[model.LabelName(l.Name)] = model.LabelValue(l.Value) })
			vec = append(vec, &model.Sample{Metric: m, Timestamp: model.Time(s.T), Value: model.SampleValue(s.F)})
		}
		v = vec
	default:
		writeProm(w, http.StatusBadRequest, nil, errUnsupported)
		return
	}
	writeProm(w, http.StatusOK, v, nil)
}

var errUnsupported = errors.New("the stand-in answers instant vectors and scalars only")

func writeProm(w http.ResponseWriter, code int, v model.Value, err error) {
	body := map[string]any{"status": "success"}
	if err != nil {
		body = map[string]any{"status": "error", "errorType": "bad_data", "error": err.Error()}
	} else {
		body["data"] = map[string]any{"resultType": v.Type().String(), "result": v}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}
