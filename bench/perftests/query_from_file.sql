SELECT intDiv(number, {bucket}) AS b, avg(number) FROM numbers_mt(10000000) GROUP BY b FORMAT Null
