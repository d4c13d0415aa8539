DELETE FROM concert WHERE singer_id = 2;
DELETE FROM singer WHERE id = 2;
