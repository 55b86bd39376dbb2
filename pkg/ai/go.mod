module supportplatform.dev/ai

go 1.26.0

require (
	github.com/abadojack/whatlanggo v1.0.1
	golang.org/x/text v0.43.0
)
