package httpapi

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/httpserver"
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
	id, err = pathID(c)
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
