module github.com/supportplatform/problemjson

go 1.22
