// Command topics is the topics service: topics, their action and document
// mappings, page-topic mappings, and the minimal actions and documents they
// link to; plus the NATS lookups other services use.
//
//	topics            serve (migrations are applied at start)
//	topics migrate    apply migrations and exit
package main

import (
	"context"
	"io"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/boot"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/services/topics/internal/httpapi"
	"supportplatform.dev/services/topics/internal/postgres"
	"supportplatform.dev/services/topics/internal/rpc"
	"supportplatform.dev/services/topics/internal/topics"
)

// Config of the topics service.
type Config struct {
	HTTPAddr string `env:"HTTP_ADDR" default:"127.0.0.1:8082" desc:"listen address of the topics service"`
	config.Common
}

func main() { boot.Main("topics", run) }

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var cfg Config
	if err := config.Load(getenv, &cfg); err != nil {
		return err
	}
	cmd, err := boot.Command(args)
	if err != nil {
		return err
	}
	if cmd == "healthcheck" {
		return boot.Healthcheck(ctx, cfg.HTTPAddr, stdout)
	}
	// Outbox: the store writes each change's events to the outbox table in
	// the change's transaction; boot relays them to JetStream.
	opts := boot.Options{Service: "topics", Schema: postgres.Schema, Migrations: postgres.Migrations(), Outbox: true}
	if cmd == "migrate" {
		return boot.Migrate(ctx, cfg.Common, opts, stdout)
	}
	deps, err := boot.Open(ctx, cfg.Common, opts, stdout)
	if err != nil {
		return err
	}
	defer func() { _ = deps.Close() }()
	store := postgres.New(deps.DB, deps.Now).WithWake(deps.OutboxWake)
	svc := &topics.Service{
		TopicService:         topics.NewTopicService(store),
		TopicActionService:   topics.NewTopicActionService(store),
		TopicDocumentService: topics.NewTopicDocumentService(store),
		PageMappingService:   topics.NewPageMappingService(store),
		ActionService:        topics.NewActionService(store),
		DocumentService:      topics.NewDocumentService(store),
	}

	if err := rpc.Serve(deps.Bus, svc); err != nil {
		return err
	}

	httpapi.New(svc, deps.Server).Routes(deps.Server.Engine, authn.Middleware(deps.Verifier, deps.Server.Fail))
	return deps.Serve(ctx, cfg.HTTPAddr, stdout)
}
