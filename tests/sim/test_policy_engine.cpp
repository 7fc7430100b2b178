// Tests: see the file's owner. (placeholder until the tests land)
