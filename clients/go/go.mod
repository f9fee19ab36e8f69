module github.com/holistic-eval/holistic/clients/go

go 1.19
