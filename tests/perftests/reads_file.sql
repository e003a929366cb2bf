SELECT count() FROM numbers({n}) WHERE number % 7 = 1
