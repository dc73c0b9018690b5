package filter

// extraDenseCases lists further models for TestSmoothMatchesDenseGP.
var extraDenseCases []testCase
