package httpserver

import (
	"errors"
	"net/url"
	"testing"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
)

func TestQuery(t *testing.T) {
	type result struct {
		page   paging.Page
		id     *int64
		active *bool
		name   string
	}
	i64 := func(n int64) *int64 { return &n }
	yes, no := true, false
	cases := []struct {
		name  string
		query string
		want  result
		bad   []string // parameters named in the 400
	}{
		{"none", "", result{page: paging.Page{Number: 1, Size: 20}}, nil},
		{"all valid", "pageNumber=2&pageSize=5&topicId=7&isActive=true&name=Billing",
			result{paging.Page{Number: 2, Size: 5}, i64(7), &yes, "Billing"}, nil},
		{"names in any case", "PAGENUMBER=3&pagesize=10&TopicID=9&isactive=FALSE&NAME=x",
			result{paging.Page{Number: 3, Size: 10}, i64(9), &no, "x"}, nil},
		{"empty values are absent", "pageSize=&topicId=&isActive=&name=",
			result{page: paging.Page{Number: 1, Size: 20}}, nil},
		{"text kept as written", "name=%20two%20",
			result{page: paging.Page{Number: 1, Size: 20}, name: " two "}, nil},
		{"unknown names ignored", "foo=bar", result{page: paging.Page{Number: 1, Size: 20}}, nil},
		{"leading space", "pageSize=%2010", result{}, []string{"pageSize"}},
		{"trailing space", "topicId=1%20", result{}, []string{"topicId"}},
		{"plus sign", "pageNumber=%2B5", result{}, []string{"pageNumber"}},
		{"unescaped plus is a space", "pageNumber=+5", result{}, []string{"pageNumber"}},
		{"minus sign", "topicId=-1", result{}, []string{"topicId"}},
		{"leading zero", "pageSize=010", result{}, []string{"pageSize"}},
		{"id zero", "topicId=0", result{}, []string{"topicId"}},
		{"id leading zero", "topicId=07", result{}, []string{"topicId"}},
		{"id too large", "topicId=9223372036854775808", result{}, []string{"topicId"}},
		{"bool other word", "isActive=yes", result{}, []string{"isActive"}},
		{"bool with space", "isActive=true%20", result{}, []string{"isActive"}},
		{"text too long", "name=abcdefghijk", result{}, []string{"name"}},
		{"given twice", "pageSize=5&pageSize=5", result{}, []string{"pageSize"}},
		{"given twice in two spellings", "pageSize=5&pagesize=6", result{}, []string{"pageSize"}},
		{"id given twice", "topicId=1&TOPICID=2", result{}, []string{"topicId"}},
		{"several at once", "pageNumber=0&pageSize=%2B1&topicId=x&isActive=1",
			result{}, []string{"pageNumber", "pageSize", "topicId", "isActive"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vals, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			q := ParseQuery(vals)
			got := result{page: q.Page(), id: q.ID("topicId"), active: q.Bool("isActive"), name: q.Text("name", 10)}
			err = q.Err()
			if len(tc.bad) > 0 {
				var ae *apperr.Error
				if !errors.As(err, &ae) || ae.Code != apperr.Invalid {
					t.Fatalf("want a 400, got %v", err)
				}
				for _, f := range tc.bad {
					if ae.Fields[f] == "" {
						t.Fatalf("errors %v do not name %s", ae.Fields, f)
					}
				}
				if len(ae.Fields) != len(tc.bad) {
					t.Fatalf("errors %v, want exactly %v", ae.Fields, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got.page != tc.want.page || got.name != tc.want.name ||
				(got.id == nil) != (tc.want.id == nil) || (got.id != nil && *got.id != *tc.want.id) ||
				(got.active == nil) != (tc.want.active == nil) || (got.active != nil && *got.active != *tc.want.active) {
				t.Fatalf("got %+v (id %v active %v), want %+v", got, got.id, got.active, tc.want)
			}
		})
	}
}

func TestPathIDIsStrict(t *testing.T) {
	h := newTestServer(t)
	h.Engine.GET("/api/Things/:id", h.Handle(func(c *gin.Context) error {
		id, err := PathID(c)
		if err != nil {
			return err
		}
		c.JSON(200, gin.H{"id": id})
		return nil
	}))
	cases := []struct {
		name, id string
		status   int
	}{
		{"plain", "1", 200},
		{"large", "9223372036854775807", 200},
		{"leading zero", "01", 400},
		{"plus", "%2B1", 400},
		{"minus", "-1", 400},
		{"zero", "0", 400},
		{"space", "%201", 400},
		{"overflow", "9223372036854775808", 400},
		{"word", "abc", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, p := do(t, h.Handler(), "GET", "/api/Things/"+tc.id, "", "")
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.status == 400 && p.Errors["id"] == "" {
				t.Fatalf("problem does not name id: %+v", p)
			}
		})
	}
}
