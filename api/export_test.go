package api

// BodyLimit is bodyLimit, for the tests of package api_test.
var BodyLimit = bodyLimit
