package boot

import (
	"log/slog"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"

	"supportplatform.dev/pkg/redisconn"
	"supportplatform.dev/pkg/telemetry"
)

// Some libraries keep a setting per process and take no value per engine,
// client or call. boot sets them here and nowhere else, once per process:
//
//   - gin's mode: in debug mode gin.New and every route registration print to
//     stdout; gin has no per-engine mode. Release.
//   - go-redis's logger (a failed dial, a pool notice): go-redis has no
//     per-client logger. The service's logger, as JSON warnings
//     (redisconn.Logger).
//   - OpenTelemetry's tracer provider, propagator and error handler: the
//     instrumentations (otelgin, otelpgx, redisotel, otelhttp in the HTTP
//     clients), natsbus's message spans and telemetry.Recording read them
//     from otel's globals. The provider telemetry.Setup built; the exporter's
//     errors go to the service's logger.
//
// In production a process opens one service. A test process that opens
// several keeps the first one's settings (their logger receives go-redis's
// messages); the test services do not export spans.
var globalsOnce sync.Once

func setProcessGlobals(log *slog.Logger, tracing *telemetry.Tracing) {
	globalsOnce.Do(func() { installGlobals(log, tracing) })
}

func installGlobals(log *slog.Logger, tracing *telemetry.Tracing) {
	gin.SetMode(gin.ReleaseMode)
	redis.SetLogger(redisconn.Logger{Log: log})
	otel.SetTextMapPropagator(telemetry.Propagator())
	otel.SetTracerProvider(tracing.Provider())
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("telemetry: spans not exported", "error", err.Error())
	}))
}
