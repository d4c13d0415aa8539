UPDATE concert SET year = 2016 WHERE year = 2015;
