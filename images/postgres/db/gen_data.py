"""Deterministic data of the `shop` database, printed as SQL COPY blocks.

    python3 gen_data.py | psql -d shop

Every value comes from a fixed-seed generator defined here (not Python's `random`, whose
algorithms may change between versions), so every build loads byte-identical data. The
data is deliberately a little dirty, as real data is: mixed-case and padded e-mails,
country spelled several ways, phone numbers in several formats, shipped orders without
a shipped date, duplicated payments, under-paid orders, products that no longer sell.
Tasks are written against it.
"""

from __future__ import annotations

import datetime as dt
import sys
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


class Rng:
    """A 64-bit xorshift* generator: small, fast, identical everywhere."""

    def __init__(self, seed: int) -> None:
        self.state = seed & 0xFFFFFFFFFFFFFFFF or 1

    def next(self) -> int:
        x = self.state
        x ^= (x >> 12) & 0xFFFFFFFFFFFFFFFF
        x ^= (x << 25) & 0xFFFFFFFFFFFFFFFF
        x ^= (x >> 27) & 0xFFFFFFFFFFFFFFFF
        self.state = x
        return (x * 0x2545F4914F6CDD1D) & 0xFFFFFFFFFFFFFFFF

    def below(self, n: int) -> int:
        return self.next() % n

    def between(self, lo: int, hi: int) -> int:
        return lo + self.below(hi - lo + 1)

    def chance(self, percent: float) -> bool:
        return self.below(10_000) < percent * 100

    def pick(self, items):
        return items[self.below(len(items))]

    def sample(self, items, k: int):
        pool = list(items)
        out = []
        for _ in range(min(k, len(pool))):
            out.append(pool.pop(self.below(len(pool))))
        return out

    def money(self, lo: float, hi: float) -> Decimal:
        cents = self.between(int(lo * 100), int(hi * 100))
        return (Decimal(cents) / 100).quantize(CENT)


R = Rng(20240229)

FIRST = (
    "Ada Alan Alice Amara Ana Ben Bianca Carlos Chen Chloe Dan Daria Diego Elena Emma Eric "
    "Fatima Felix Grace Hana Hugo Ines Ivan Jack James Julia Kai Karin Lara Leo Lina Luca "
    "Maya Mei Mila Nadia Nina Noah Olga Omar Oscar Paula Priya Quinn Rafael Rosa Sam Sara "
    "Sofia Tariq Theo Uma Victor Wei Yara Yusuf Zoe"
).split()
LAST = (
    "Abbott Adler Baker Barros Becker Brooks Castro Chen Costa Diaz Dubois Evans Fischer "
    "Garcia Gomez Hall Hansen Ito Jansen Kim Klein Kowalski Larsen Lopez Martin Meyer "
    "Moreau Nakamura Novak Okafor Olsen Park Patel Perez Petrov Quinn Rossi Sato Schmidt "
    "Silva Smith Suzuki Tanaka Torres Vargas Weber Wong Young Zhang Ziegler"
).split()

# (canonical country, spellings seen in the data with their weights, cities)
COUNTRIES = [
    ("United States", [("United States", 70), ("USA", 15), ("US", 10), ("U.S.A.", 5)],
     ["New York", "Chicago", "Austin", "Seattle", "Boston", "Denver"]),
    ("United Kingdom", [("United Kingdom", 75), ("UK", 20), ("Great Britain", 5)],
     ["London", "Manchester", "Leeds", "Bristol"]),
    ("Germany", [("Germany", 85), ("Deutschland", 15)], ["Berlin", "Hamburg", "Munich", "Cologne"]),
    ("France", [("France", 100)], ["Paris", "Lyon", "Lille"]),
    ("Canada", [("Canada", 100)], ["Toronto", "Vancouver", "Montreal"]),
    ("Japan", [("Japan", 100)], ["Tokyo", "Osaka"]),
    ("Brazil", [("Brazil", 90), ("Brasil", 10)], ["Sao Paulo", "Rio de Janeiro"]),
    ("Spain", [("Spain", 100)], ["Madrid", "Barcelona", "Valencia"]),
    ("Netherlands", [("Netherlands", 80), ("Holland", 20)], ["Amsterdam", "Rotterdam"]),
    ("Australia", [("Australia", 100)], ["Sydney", "Melbourne"]),
]
COUNTRY_WEIGHTS = [30, 14, 12, 9, 8, 6, 6, 6, 5, 4]

DEPARTMENTS = [
    ("Executive", "New York", "900000.00"),
    ("Sales", "Chicago", "1250000.00"),
    ("Engineering", "Austin", "2400000.00"),
    ("Support", "Austin", "610000.00"),
    ("Marketing", "New York", "780000.00"),
    ("Finance", "New York", "540000.00"),
    ("Operations", "Chicago", "860000.00"),
    ("Human Resources", "Chicago", "330000.00"),
    ("Purchasing", "Seattle", "420000.00"),
]

# (name, parent name)
CATEGORIES = [
    ("Electronics", None),
    ("Home & Kitchen", None),
    ("Books", None),
    ("Sports & Outdoors", None),
    ("Toys", None),
    ("Phones", "Electronics"),
    ("Laptops", "Electronics"),
    ("Audio", "Electronics"),
    ("Headphones", "Audio"),
    ("Speakers", "Audio"),
    ("Cookware", "Home & Kitchen"),
    ("Furniture", "Home & Kitchen"),
    ("Fiction", "Books"),
    ("Non-fiction", "Books"),
    ("Cycling", "Sports & Outdoors"),
    ("Camping", "Sports & Outdoors"),
    ("Board Games", "Toys"),
]

# Leaf-ish categories products live in: (category, nouns, price range)
PRODUCT_KINDS = [
    ("Phones", ["Phone", "Smartphone", "Phone Case", "Charger"], (9, 1100)),
    ("Laptops", ["Laptop", "Notebook", "Ultrabook", "Laptop Stand"], (35, 2600)),
    ("Audio", ["Audio Cable", "Amplifier", "Microphone"], (12, 480)),
    ("Headphones", ["Headphones", "Earbuds", "Headset"], (19, 420)),
    ("Speakers", ["Speaker", "Soundbar", "Subwoofer"], (25, 900)),
    ("Cookware", ["Frying Pan", "Saucepan", "Wok", "Dutch Oven", "Knife Set"], (15, 320)),
    ("Furniture", ["Desk", "Chair", "Bookshelf", "Side Table", "Lamp"], (29, 1400)),
    ("Fiction", ["Novel", "Short Stories", "Poetry Collection"], (6, 45)),
    ("Non-fiction", ["Cookbook", "Biography", "History", "Field Guide"], (8, 70)),
    ("Cycling", ["Bike Helmet", "Bike Light", "Road Bike", "Bike Lock"], (12, 2900)),
    ("Camping", ["Tent", "Sleeping Bag", "Camp Stove", "Backpack"], (18, 650)),
    ("Board Games", ["Board Game", "Puzzle", "Card Game"], (9, 95)),
    ("Toys", ["Building Set", "Plush Toy", "Toy Car"], (7, 180)),
]
ADJECTIVES = (
    "Aero Bold Classic Compact Deluxe Eco Essential Flex Fusion Giga Lite Max Nano Nova "
    "Prime Pro Pulse Quantum Rapid Sleek Smart Solar Sonic Spark Swift Terra Ultra Vivid Zen"
).split()

SUPPLIER_WORDS = (
    "Acme Apex Atlas Beacon Cobalt Crescent Delta Everest Falcon Granite Harbor Horizon "
    "Keystone Lumen Meridian Northwind Orion Pioneer Redwood Summit Vertex Zenith"
).split()
SUPPLIER_KINDS = ["Trading", "Supply Co", "Wholesale", "Imports", "Distribution", "Goods"]

START = dt.date(2021, 1, 1)
END = dt.date(2024, 6, 30)


def money(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def day(offset: int) -> dt.date:
    return START + dt.timedelta(days=offset)


def weighted(options):
    total = sum(w for _, w in options)
    roll = R.below(total)
    for value, weight in options:
        if roll < weight:
            return value
        roll -= weight
    raise AssertionError


def departments():
    return [(i, n, loc, b) for i, (n, loc, b) in enumerate(DEPARTMENTS, 1)]


def employees():
    dept_id = {name: i for i, (name, _, _) in enumerate(DEPARTMENTS, 1)}
    rows, used = [], set()

    def add(first, last, title, dept, manager, salary_range, active=True):
        emp_id = len(rows) + 1
        email = f"{first}.{last}@shop.example".lower()
        n = 2
        while email in used:
            email = f"{first}.{last}{n}@shop.example".lower()
            n += 1
        used.add(email)
        hired = day(-R.between(200, 3400))
        salary = R.money(*salary_range)
        rows.append([emp_id, first, last, email, title, dept_id[dept], manager, hired, salary,
                     active])
        return emp_id

    ceo = add("Grace", "Hopper", "Chief Executive Officer", "Executive", None, (240000, 260000))
    add("Alan", "Kay", "Executive Assistant", "Executive", ceo, (62000, 70000))
    plan = {  # department: (head title, team lead count, staff title, staff count, pay)
        "Sales": ("VP of Sales", 2, "Sales Representative", 16, (48000, 78000)),
        "Engineering": ("VP of Engineering", 2, "Software Engineer", 10, (95000, 150000)),
        "Support": ("Head of Support", 1, "Support Specialist", 6, (42000, 58000)),
        "Marketing": ("Head of Marketing", 1, "Marketing Specialist", 4, (55000, 82000)),
        "Finance": ("Chief Financial Officer", 0, "Accountant", 3, (60000, 90000)),
        "Operations": ("Head of Operations", 1, "Logistics Coordinator", 4, (45000, 65000)),
        "Human Resources": ("Head of People", 0, "HR Generalist", 2, (50000, 68000)),
        "Purchasing": ("Purchasing Manager", 0, "Buyer", 3, (47000, 66000)),
    }
    for dept, (head_title, leads, staff_title, staff, pay) in plan.items():
        head = add(R.pick(FIRST), R.pick(LAST), head_title, dept, ceo,
                   (pay[1] * 1.5, pay[1] * 1.9))
        lead_ids = [
            add(R.pick(FIRST), R.pick(LAST), f"{staff_title} Lead", dept, head,
                (pay[1], pay[1] * 1.25))
            for _ in range(leads)
        ]
        for _ in range(staff):
            boss = R.pick(lead_ids) if lead_ids else head
            add(R.pick(FIRST), R.pick(LAST), staff_title, dept, boss, pay,
                active=not R.chance(12))
    return rows


def categories():
    ids = {name: i for i, (name, _) in enumerate(CATEGORIES, 1)}
    return [(ids[n], n, ids[p] if p else None) for n, p in CATEGORIES]


def suppliers():
    rows, names = [], set()
    while len(rows) < 22:
        name = f"{R.pick(SUPPLIER_WORDS)} {R.pick(SUPPLIER_KINDS)}"
        if name in names:
            continue
        names.add(name)
        canonical = COUNTRIES[R.below(len(COUNTRIES))][0]
        slug = name.lower().replace(" ", "")
        email = None if R.chance(20) else f"sales@{slug}.example"
        rows.append((len(rows) + 1, name, canonical, email))
    return rows


def products(category_ids, supplier_count):
    rows, names = [], set()
    while len(rows) < 160:
        cat, nouns, (lo, hi) = R.pick(PRODUCT_KINDS)
        name = f"{R.pick(ADJECTIVES)} {R.pick(nouns)}"
        if name in names:
            name = f"{name} {R.between(2, 9)}"
        if name in names:
            continue
        names.add(name)
        pid = len(rows) + 1
        price = R.money(lo, hi)
        cost = money(price * Decimal(R.between(38, 72)) / 100)
        stock = 0 if R.chance(14) else R.between(1, 480)
        discontinued = R.chance(9)
        rows.append([pid, f"SKU-{pid:05d}", name, category_ids[cat], R.between(1, supplier_count),
                     price, cost, stock, discontinued])
    return rows


def phone_text():
    area, mid, end = R.between(201, 989), R.between(200, 999), R.between(0, 9999)
    return R.pick([
        f"({area}) {mid}-{end:04d}",
        f"{area}-{mid}-{end:04d}",
        f"{area}.{mid}.{end:04d}",
        f"{area}{mid}{end:04d}",
        f"+1 {area} {mid} {end:04d}",
    ])


def customers():
    rows, emails = [], []
    for cid in range(1, 421):
        first, last = R.pick(FIRST), R.pick(LAST)
        name = f"{first} {last}"
        c = COUNTRIES[weighted(list(zip(range(len(COUNTRIES)), COUNTRY_WEIGHTS, strict=True)))]
        country = weighted(c[1])
        city = R.pick(c[2])
        email = f"{first}.{last}{cid}@mail.example".lower()
        if R.chance(9):
            email = f"{first}.{last}{cid}@Mail.Example"
        if R.chance(5):
            email = f"  {email} "
        if R.chance(3):
            email = None
        phone = None if R.chance(10) else phone_text()
        segment = weighted([("consumer", 60), ("corporate", 28), ("home_office", 12)])
        signup = day(R.between(-700, 1200))
        rows.append([cid, name, email, phone, country, city, segment, signup])
        emails.append(email)
    # A few customers registered twice: a second account with the same e-mail, other case.
    for src in (17, 58, 103, 177, 240, 333):
        cid = len(rows) + 1
        first = rows[src - 1]
        email = first[2] or f"dup{src}@mail.example"
        if first[2] is None:
            first[2] = email
        rows.append([cid, first[1], email.strip().upper(), None, first[4], first[5], first[6],
                     first[7] + dt.timedelta(days=R.between(30, 400))])
    return rows


def orders_and_items(customer_rows, employee_rows, product_rows):
    sales = [e[0] for e in employee_rows if e[5] == 2 and "Representative" in e[4]]
    # Some customers buy a lot, some never.
    buyers = [c[0] for c in customer_rows if not R.chance(11)]
    heavy = R.sample(buyers, 40)
    # The newest products have not sold yet; discontinued ones stopped selling mid-2023;
    # products out of stock (and not discontinued) have not sold since October 2023.
    new_ids = {p[0] for p in product_rows[-8:]}
    for p in product_rows[-8:]:
        p[7], p[8] = max(p[7], 12), False

    def sellable(p, when):
        if p[0] in new_ids or (p[8] and when > dt.date(2023, 6, 30)):
            return False
        return not (p[7] == 0 and not p[8] and when >= dt.date(2023, 10, 1))

    orders, items = [], []
    for oid in range(1, 2201):
        cust = R.pick(heavy) if R.chance(30) else R.pick(buyers)
        signup = customer_rows[cust - 1][7]
        first_day = max((signup - START).days, 0)
        offset = R.between(first_day, (END - START).days) if first_day < (END - START).days \
            else (END - START).days
        ordered = day(offset)
        age = (END - ordered).days
        if R.chance(6):
            status = "cancelled"
        elif age > 30:
            status = "delivered"
        elif age > 8:
            status = R.pick(["delivered", "shipped"])
        else:
            status = R.pick(["pending", "pending", "shipped"])
        shipped = None
        if status in ("shipped", "delivered"):
            shipped = ordered + dt.timedelta(days=R.between(0, 6))
            if R.chance(1.2):
                shipped = None  # dirty: shipped without a date
        employee = None if R.chance(7) else R.pick(sales)
        orders.append([oid, cust, employee, ordered, status, shipped])
        for prod in R.sample([p for p in product_rows if sellable(p, ordered)], R.between(1, 5)):
            price = prod[5]
            if age > 365:  # older orders were sold at an older price
                price = money(price * Decimal(R.between(88, 100)) / 100)
            discount = Decimal(R.pick(["0", "0", "0", "0", "0.05", "0.10", "0.15", "0.20",
                                       "0.25", "0.35", "0.50"]))
            items.append([oid, prod[0], R.between(1, 8) if R.chance(85) else R.between(9, 30),
                          price, discount.quantize(CENT)])
    return orders, items


def payments(order_rows, item_rows):
    totals: dict[int, Decimal] = {}
    for oid, _, qty, price, disc in item_rows:
        totals[oid] = totals.get(oid, Decimal(0)) + qty * price * (1 - disc)
    rows = []

    def pay(oid, amount, when, method):
        rows.append([len(rows) + 1, oid, money(amount), method, when])

    for oid, _, _, ordered, status, _ in order_rows:
        if status == "cancelled" or (status == "pending" and R.chance(60)):
            continue
        total = money(totals[oid])
        when = dt.datetime.combine(ordered, dt.time(R.between(7, 22), R.between(0, 59),
                                                    R.between(0, 59)))
        method = weighted([("card", 62), ("paypal", 20), ("bank_transfer", 13),
                           ("gift_card", 5)])
        if status == "delivered" and R.chance(3):
            total = money(total * Decimal(R.between(40, 90)) / 100)  # under-paid
        if total > 200 and R.chance(12):
            first = money(total * Decimal(R.between(20, 60)) / 100)
            pay(oid, first, when, "gift_card")
            pay(oid, total - first, when + dt.timedelta(minutes=R.between(1, 30)), method)
        else:
            pay(oid, total, when, method)
            if R.chance(1):
                pay(oid, total, when, method)  # dirty: the same payment recorded twice
    return rows


def text(value) -> str:
    if value is None:
        return r"\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    out = str(value)
    return out.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def copy(out, table: str, columns: str, rows) -> None:
    out.write(f"COPY shop.{table} ({columns}) FROM stdin;\n")
    for row in rows:
        out.write("\t".join(text(v) for v in row) + "\n")
    out.write("\\.\n")


def main() -> None:
    out = sys.stdout
    cats = categories()
    emps = employees()
    sups = suppliers()
    prods = products({name: cid for cid, name, _ in cats}, len(sups))
    custs = customers()
    orders, items = orders_and_items(custs, emps, prods)
    pays = payments(orders, items)
    copy(out, "departments", "id, name, location, budget", departments())
    copy(out, "employees", "id, first_name, last_name, email, title, department_id, manager_id, "
         "hire_date, salary, active", emps)
    copy(out, "categories", "id, name, parent_id", cats)
    copy(out, "suppliers", "id, name, country, contact_email", sups)
    copy(out, "products", "id, sku, name, category_id, supplier_id, unit_price, cost, stock, "
         "discontinued", prods)
    copy(out, "customers", "id, name, email, phone, country, city, segment, signup_date", custs)
    copy(out, "orders", "id, customer_id, employee_id, order_date, status, shipped_date", orders)
    copy(out, "order_items", "order_id, product_id, quantity, unit_price, discount", items)
    copy(out, "payments", "id, order_id, amount, method, paid_at", pays)
    for table in ("departments", "employees", "categories", "suppliers", "products",
                  "customers", "orders", "payments"):
        out.write(f"SELECT setval(pg_get_serial_sequence('shop.{table}', 'id'), "
                  f"(SELECT max(id) FROM shop.{table}));\n")


if __name__ == "__main__":
    main()
