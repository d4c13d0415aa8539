PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE "Singer" (
  "Singer_ID" INTEGER PRIMARY KEY AUTOINCREMENT,
  "Name" varchar(50) NOT NULL,
  "Country" TEXT,
  "Age" int,
  "Net_Worth" REAL
);
INSERT INTO Singer VALUES(1,'Joe Sharp','Netherlands',52,30.5);
INSERT INTO Singer VALUES(2,'Timbaland','United States',32,12.25);
INSERT INTO Singer VALUES(3,'Justin Brown','France',29,NULL);
INSERT INTO Singer VALUES(4,'Rose White','France',41,8);
CREATE TABLE concert (
  concert_ID int PRIMARY KEY,
  concert_Name text,
  Singer_ID int REFERENCES Singer(Singer_ID),
  Year text,
  Held date
);
INSERT INTO concert VALUES(1,'Auditions',1,'2014','2014-05-01');
INSERT INTO concert VALUES(2,'Super bootcamp',2,'2014','2014-06-11');
INSERT INTO concert VALUES(3,'Home Visits',2,'2015',NULL);
CREATE INDEX concert_year ON concert(Year);
CREATE VIEW older AS SELECT Name FROM Singer WHERE Age > 40;
DELETE FROM sqlite_sequence;
INSERT INTO sqlite_sequence VALUES('Singer',4);
COMMIT;
