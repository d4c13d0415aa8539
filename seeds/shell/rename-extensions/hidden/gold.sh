cd photos
for f in *.JPG *.jpeg; do
  [ -e "$f" ] && mv -- "$f" "${f%.*}.jpg"
done
