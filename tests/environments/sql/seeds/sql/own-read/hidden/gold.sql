SELECT name, age FROM singer WHERE country = 'Spain' ORDER BY age DESC
