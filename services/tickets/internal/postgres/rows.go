package postgres

// Reading rows by column name: each statement's SELECT list names the
// columns (aliases for computed ones) of a row struct's db tags, and
// pgx.RowToStructByName fails when a column and a field do not match.

import "github.com/jackc/pgx/v5"

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

// convert maps rows to what they hold.
func convert[R, T any](rows []R, to func(R) T) []T {
	if rows == nil {
		return nil
	}
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = to(r)
	}
	return out
}
