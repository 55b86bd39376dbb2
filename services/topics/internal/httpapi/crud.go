package httpapi

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/paging"
)

// The record routes of every resource share one shape: the caller's customer,
// the id from the path, a domain call, a response type. These builders hold
// that shape once; each handler only names its domain call and mapping.

// inputter is a request body that converts to a domain input.
type inputter[I any] interface{ input() I }

func customerAndID(c *gin.Context) (customerID, id int64, err error) {
	if customerID, err = customer(c); err != nil {
		return 0, 0, err
	}
	id, err = httpserver.PathID(c)
	return customerID, id, err
}

// getOne answers GET .../:id with the caller's record.
func getOne[T, R any](c *gin.Context, get func(context.Context, int64, int64) (T, error), to func(T) R) error {
	cid, id, err := customerAndID(c)
	if err != nil {
		return err
	}
	v, err := get(c.Request.Context(), cid, id)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, to(v))
	return nil
}

// createOne answers POST with 201, the record and its Location.
func createOne[Req inputter[I], I, T, R any](c *gin.Context, base string, create func(context.Context, int64, I) (T, error),
	id func(T) int64, to func(T) R) error {
	cid, err := customer(c)
	if err != nil {
		return err
	}
	var req Req
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	v, err := create(c.Request.Context(), cid, req.input())
	if err != nil {
		return err
	}
	created(c, base, id(v), to(v))
	return nil
}

// updateOne answers PUT .../:id, which replaces the record, with 204.
func updateOne[Req inputter[I], I, T any](c *gin.Context, update func(context.Context, int64, int64, I) (T, error)) error {
	cid, id, err := customerAndID(c)
	if err != nil {
		return err
	}
	var req Req
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	if _, err := update(c.Request.Context(), cid, id, req.input()); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

// deleteOne answers DELETE .../:id with 204.
func deleteOne(c *gin.Context, del func(context.Context, int64, int64) error) error {
	cid, id, err := customerAndID(c)
	if err != nil {
		return err
	}
	if err := del(c.Request.Context(), cid, id); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

// listPage answers a list route: filter reads the resource's own query
// parameters (problems collect in q and are reported together with paging
// problems), list pages through the caller's records.
func listPage[F, T, R any](c *gin.Context, filter func(q *httpserver.Query) F,
	list func(context.Context, int64, F, paging.Page) ([]T, int, error), to func(T) R) error {
	cid, err := customer(c)
	if err != nil {
		return err
	}
	q := httpserver.NewQuery(c)
	pg := q.Page()
	f := filter(q)
	if err := q.Err(); err != nil {
		return err
	}
	items, total, err := list(c.Request.Context(), cid, f, pg)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, paging.NewEnvelope(paging.Map(items, to), total, pg))
	return nil
}

// noFilter is the filter of resources listed without query filters.
func noFilter(*httpserver.Query) struct{} { return struct{}{} }

// unfiltered adapts a list call that takes no filter to listPage.
func unfiltered[T any](list func(context.Context, int64, paging.Page) ([]T, int, error)) func(context.Context, int64, struct{}, paging.Page) ([]T, int, error) {
	return func(ctx context.Context, cid int64, _ struct{}, p paging.Page) ([]T, int, error) {
		return list(ctx, cid, p)
	}
}
