module github.com/supportplatform/httpsrequired

go 1.22
