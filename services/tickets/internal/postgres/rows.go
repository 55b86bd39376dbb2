package postgres

// Reading rows by column name: each statement's SELECT list names the
// columns (aliases for computed ones) of a row struct's db tags, and
// pgx.RowToStructByName fails when a column and a field do not match.

import (
	"context"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
)

// collectOne reads the one row a query returns into R by name
// (pgx.ErrNoRows without one). It takes Query's results as they are:
// collectOne[R](tx.Query(...)).
func collectOne[R any](rows pgx.Rows, err error) (R, error) {
	if err != nil {
		var zero R
		return zero, err
	}
	return pgx.CollectOneRow(rows, pgx.RowToStructByName[R])
}

// collectAll reads every row a query returns into R by name.
func collectAll[R any](rows pgx.Rows, err error) ([]R, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[R])
}

// convert maps rows to what they hold: nil without rows, as
// postgres.Collect returns.
func convert[R, T any](rows []R, to func(R) T) []T {
	if len(rows) == 0 {
		return nil
	}
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = to(r)
	}
	return out
}

// page runs a count and a page query with the same filter arguments, as
// postgres.Page does, reading the page's rows into R by name; the page
// query gets LIMIT and OFFSET as its last two parameters. what names the
// records in errors.
func page[R any](ctx context.Context, q postgres.Querier, what, countSQL, pageSQL string, p paging.Page, args ...any) ([]R, int, error) {
	var total int
	if err := q.QueryRow(ctx, countSQL, args...).Scan(&total); err != nil {
		return nil, 0, postgres.Error(err, what)
	}
	if total == 0 || p.Offset() >= total {
		return nil, total, nil
	}
	rows, err := collectAll[R](q.Query(ctx, pageSQL, append(args, p.Size, p.Offset())...))
	return rows, total, postgres.Error(err, what)
}
