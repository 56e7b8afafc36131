#!/bin/bash
python3 -c "
import csv
rows = list(csv.DictReader(open('/app/orders.csv')))
print(sum(r['status'] == 'shipped' for r in rows))
" > /app/answer.txt
