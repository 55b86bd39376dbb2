// Package httpcrud answers the record routes every service has, in one
// shape: the caller's customer (the tenant every call is scoped to), the id
// from the path, a domain call, a response type. A handler only names its
// domain call and its mapping.
package httpcrud

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/paging"
)

// Customer returns the caller's customer id.
func Customer(c *gin.Context) (int64, error) {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return 0, err
	}
	return p.CustomerID, nil
}

// Created answers 201 with body and the Location base/id.
func Created(c *gin.Context, base string, id int64, body any) {
	c.Header("Location", base+"/"+strconv.FormatInt(id, 10))
	c.JSON(http.StatusCreated, body)
}

// Inputter is a request body that converts to a domain input.
type Inputter[I any] interface{ Input() I }

// CustomerAndID returns the caller's customer and the :id of the path.
func CustomerAndID(c *gin.Context) (customerID, id int64, err error) {
	if customerID, err = Customer(c); err != nil {
		return 0, 0, err
	}
	id, err = httpserver.PathID(c)
	return customerID, id, err
}

// GetOne answers GET .../:id with the caller's record.
func GetOne[T, R any](c *gin.Context, get func(context.Context, int64, int64) (T, error), to func(T) R) error {
	cid, id, err := CustomerAndID(c)
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

// CreateOne answers POST with 201, the record and its Location.
func CreateOne[Req Inputter[I], I, T, R any](c *gin.Context, base string, create func(context.Context, int64, I) (T, error),
	id func(T) int64, to func(T) R) error {
	cid, err := Customer(c)
	if err != nil {
		return err
	}
	var req Req
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	v, err := create(c.Request.Context(), cid, req.Input())
	if err != nil {
		return err
	}
	Created(c, base, id(v), to(v))
	return nil
}

// UpdateOne answers PUT .../:id, which replaces the record, with 204.
func UpdateOne[Req Inputter[I], I, T any](c *gin.Context, update func(context.Context, int64, int64, I) (T, error)) error {
	cid, id, err := CustomerAndID(c)
	if err != nil {
		return err
	}
	var req Req
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	if _, err := update(c.Request.Context(), cid, id, req.Input()); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

// DeleteOne answers DELETE .../:id with 204.
func DeleteOne(c *gin.Context, del func(context.Context, int64, int64) error) error {
	cid, id, err := CustomerAndID(c)
	if err != nil {
		return err
	}
	if err := del(c.Request.Context(), cid, id); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

// ListPage answers a list route: filter reads the resource's own query
// parameters (problems collect in q and are reported together with paging
// problems), list pages through the caller's records.
func ListPage[F, T, R any](c *gin.Context, filter func(q *httpserver.Query) F,
	list func(context.Context, int64, F, paging.Page) ([]T, int, error), to func(T) R) error {
	cid, err := Customer(c)
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

// NoFilter is the filter of resources listed without query filters.
func NoFilter(*httpserver.Query) struct{} { return struct{}{} }

// Unfiltered adapts a list call that takes no filter to ListPage.
func Unfiltered[T any](list func(context.Context, int64, paging.Page) ([]T, int, error)) func(context.Context, int64, struct{}, paging.Page) ([]T, int, error) {
	return func(ctx context.Context, cid int64, _ struct{}, p paging.Page) ([]T, int, error) {
		return list(ctx, cid, p)
	}
}
