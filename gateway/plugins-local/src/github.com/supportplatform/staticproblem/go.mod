module github.com/supportplatform/staticproblem

go 1.22
