//! Integration tests of dlmd; the tests are the `[[test]]` targets beside this file.
