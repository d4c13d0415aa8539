"""Generate the support database deterministically (run once, at image build time).

Usage: python3 seed.py OUT.db

A hand-written core of customers, orders and tickets, plus generated filler from a
fixed-seed RNG. Running it twice gives byte-identical table contents.
"""

import os
import random
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schema import SCHEMA

UPS, FEDEX, USPS = "UPS", "FedEx", "USPS"

# id, name, email, phone, street, city, state, zip, tier, created_on
CUSTOMERS = [
    ("C1001", "Alice Moreau", "alice.moreau@example.com", "503-555-0101", "12 Alder St",
     "Portland", "OR", "97201", "gold", "2023-04-11"),
    ("C1002", "Bruno Silva", "bruno.silva@example.com", "212-555-0102", "310 W 120th St",
     "New York", "NY", "10027", "standard", "2024-01-19"),
    ("C1003", "Chloe Nguyen", "chloe.nguyen@example.com", "773-555-0103", "2200 N Clark St",
     "Chicago", "IL", "60614", "standard", "2022-09-02"),
    ("C1004", "Daniel Okafor", "dan.okafor@example.com", "404-555-0104",
     "88 Peachtree Hills Ave", "Atlanta", "GA", "30305", "gold", "2021-11-30"),
    ("C1005", "Emma Schmidt", "emma.schmidt@example.com", "415-555-0105", "901 Valencia St",
     "San Francisco", "CA", "94110", "standard", "2025-03-08"),
    ("C1006", "Farah Haddad", "farah.haddad@example.com", "617-555-0106", "77 Massachusetts Ave",
     "Cambridge", "MA", "02139", "standard", "2024-06-14"),
    ("C1007", "Maria Garcia", "maria.garcia@example.com", "512-555-0107", "1500 Congress Ave",
     "Austin", "TX", "78701", "standard", "2023-02-27"),
    ("C1008", "Maria Garcia", "mgarcia88@example.net", "305-555-0108", "240 Biscayne Blvd",
     "Miami", "FL", "33101", "gold", "2022-05-05"),
    ("C1009", "George Papadopoulos", "g.papadopoulos@example.com", "206-555-0109",
     "415 Pine St", "Seattle", "WA", "98101", "standard", "2024-10-21"),
    ("C1010", "Hana Kim", "hana.kim@example.com", "718-555-0110", "35-20 Broadway",
     "Astoria", "NY", "11106", "gold", "2020-08-16"),
    ("C1011", "Ivan Petrov", "ivan.petrov@example.com", "303-555-0111", "1600 Glenarm Pl",
     "Denver", "CO", "80202", "standard", "2025-07-01"),
    ("C1012", "Julia Rossi", "julia.rossi@example.com", "215-555-0112", "44 Walnut St",
     "Philadelphia", "PA", "19103", "standard", "2023-12-03"),
    ("C1013", "Kofi Mensah", "kofi.mensah@example.com", "614-555-0113", "250 High St",
     "Columbus", "OH", "43215", "standard", "2025-01-12"),
    ("C1014", "Lena Fischer", "lena.fischer@example.com", "608-555-0114", "19 Maple Ave",
     "Madison", "WI", "53703", "standard", "2024-03-22"),
    ("C1015", "Mateo Alvarez", "mateo.alvarez@example.com", "214-555-0115", "1220 Main St",
     "Dallas", "TX", "75202", "standard", "2023-07-09"),
    ("C1016", "Noah Williams", "noah.williams@example.com", "434-555-0116", "5 Court Sq",
     "Charlottesville", "VA", "22902", "gold", "2022-02-14"),
    ("C1017", "Pablo Ortega", "pablo.ortega@example.com", "602-555-0117", "800 N 1st Ave",
     "Phoenix", "AZ", "85003", "standard", "2024-11-05"),
    ("C1018", "Quinn Baker", "quinn.baker@example.com", "843-555-0118", "66 Broad St",
     "Charleston", "SC", "29401", "standard", "2025-02-28"),
    ("C1019", "Rita Chen", "rita.chen@example.com", "207-555-0119", "3 Harbor Way",
     "Portland", "ME", "04101", "standard", "2023-10-10"),
]

# id, customer, placed_on, status, shipping_cents, items [(sku, name, qty, unit_cents)],
# shipment (carrier, tracking, status, shipped_on, delivered_on) or None
ORDERS = [
    ("O5001", "C1001", "2026-02-20", "delivered", 500,
     [("KET-BLU", "Electric kettle (blue)", 1, 3499), ("TEA-SMP", "Tea sampler", 1, 1250)],
     (UPS, "1Z999AA10123456784", "delivered", "2026-02-21", "2026-02-24")),
    ("O5002", "C1001", "2026-02-28", "processing", 0,
     [("ESP-200", "Espresso machine", 1, 18900)], None),
    ("O5003", "C1002", "2026-02-25", "shipped", 0,
     [("HIK-BT", "Hiking boots", 1, 12995)],
     (FEDEX, "771234567890", "in_transit", "2026-02-26", None)),
    ("O5004", "C1002", "2026-03-01", "pending", 499,
     [("SOC-WL", "Wool socks", 3, 900)], None),
    ("O5005", "C1003", "2026-01-10", "delivered", 500,
     [("LMP-DSK", "Desk lamp", 1, 4500)],
     (USPS, "9400111899223344556677", "delivered", "2026-01-11", "2026-01-14")),
    ("O5006", "C1003", "2026-02-15", "delivered", 0,
     [("DSK-STD", "Standing desk", 1, 42000)],
     (UPS, "1Z999AA10198765432", "delivered", "2026-02-16", "2026-02-18")),
    ("O5007", "C1004", "2026-02-08", "delivered", 500,
     [("SPK-BT", "Bluetooth speaker", 1, 5999), ("CBL-USBC", "USB-C cable", 1, 999)],
     (UPS, "1Z999AA10134343434", "delivered", "2026-02-09", "2026-02-12")),
    ("O5008", "C1004", "2026-02-05", "shipped", 0,
     [("HDP-OV", "Over-ear headphones", 1, 7900)],
     (USPS, "9400111899223300112233", "lost", "2026-02-06", None)),
    ("O5009", "C1005", "2026-02-16", "delivered", 650,
     [("YGA-MAT", "Yoga mat", 1, 2800), ("YGA-BLK", "Yoga block", 2, 850)],
     (UPS, "1Z999AA10155555555", "delivered", "2026-02-17", "2026-02-21")),
    ("O5010", "C1006", "2026-02-27", "processing", 0,
     [("BLN-PRO", "Blender", 1, 8900)], None),
    ("O5011", "C1007", "2026-02-27", "processing", 500,
     [("PLN-CER", "Ceramic planter set", 1, 6400)], None),
    ("O5012", "C1008", "2026-02-28", "processing", 500,
     [("PLN-CER", "Ceramic planter set", 1, 6400)], None),
    ("O5013", "C1009", "2026-02-12", "delivered", 650,
     [("MUG-SET", "Stoneware mug set", 1, 3600), ("BWL-RCE", "Rice bowls (set of 4)", 1, 2400)],
     (FEDEX, "771299887766", "delivered", "2026-02-13", "2026-02-17")),
    ("O5014", "C1010", "2026-01-30", "delivered", 0,
     [("LNN-SHT", "Linen sheet set", 1, 11900)],
     (UPS, "1Z999AA10166666666", "delivered", "2026-01-31", "2026-02-03")),
    ("O5015", "C1011", "2026-03-01", "pending", 0,
     [("CHR-OFF", "Office chair", 1, 19900)], None),
    ("O5016", "C1013", "2026-02-14", "delivered", 500,
     [("KET-BLU", "Electric kettle (blue)", 1, 3499)],
     (USPS, "9400111899223355667788", "delivered", "2026-02-15", "2026-02-19")),
    ("O5017", "C1012", "2025-12-05", "delivered", 500,
     [("CND-SOY", "Soy candle", 2, 1400)],
     (USPS, "9400111899223311223344", "delivered", "2025-12-06", "2025-12-10")),
    ("O5018", "C1012", "2026-01-20", "delivered", 0,
     [("BLK-WOL", "Wool blanket", 1, 8500)],
     (UPS, "1Z999AA10188888888", "delivered", "2026-01-21", "2026-01-24")),
    ("O5019", "C1012", "2026-02-22", "shipped", 500,
     [("VAS-GLS", "Glass vase", 1, 3900)],
     (FEDEX, "771255443322", "in_transit", "2026-02-23", None)),
    ("O5020", "C1015", "2026-02-09", "shipped", 0,
     [("TNT-2P", "Two-person tent", 1, 15900)],
     (UPS, "1Z999AA10177777777", "in_transit", "2026-02-10", None)),
    ("O5021", "C1012", "2026-02-28", "pending", 500,
     [("PLW-DWN", "Down pillow", 2, 4200)], None),
    ("O5022", "C1016", "2026-02-10", "delivered", 1200,
     [("GRN-CFE", "Coffee grinder", 1, 6900)],
     (UPS, "1Z999AA10199999999", "delivered", "2026-02-11", "2026-02-26")),
    ("O5023", "C1014", "2026-03-01", "pending", 499,
     [("PZL-1000", "Jigsaw puzzle (1000 pieces)", 1, 2200)], None),
    ("O5024", "C1014", "2026-02-28", "processing", 0,
     [("BRD-HRB", "Board game: Harbor", 1, 4500)], None),
    ("O5025", "C1017", "2026-01-28", "delivered", 0,
     [("KNF-CHF", "Chef's knife", 1, 8900)],
     (FEDEX, "771200001111", "delivered", "2026-01-29", "2026-02-02")),
    ("O5026", "C1017", "2026-02-18", "delivered", 650,
     [("SKL-CI12", "Cast iron skillet (12 in)", 1, 5400), ("OVN-MIT", "Oven mitts", 1, 1500)],
     (FEDEX, "771200002222", "delivered", "2026-02-19", "2026-02-23")),
    ("O5027", "C1018", "2026-02-28", "processing", 0,
     [("TBL-SDE", "Side table", 1, 13500)], None),
    ("O5028", "C1017", "2026-02-26", "shipped", 500,
     [("CTB-BMB", "Bamboo cutting board", 1, 2800)],
     (USPS, "9400111899223377889900", "in_transit", "2026-02-27", None)),
    ("O5029", "C1019", "2026-02-20", "delivered", 500,
     [("YGA-MAT", "Yoga mat", 1, 2800)],
     (USPS, "9400111899223366554433", "delivered", "2026-02-21", "2026-02-25")),
    ("O5030", "C1018", "2026-02-01", "delivered", 0,
     [("LMP-FLR", "Floor lamp", 1, 7900)],
     (UPS, "1Z999AA10112121212", "delivered", "2026-02-02", "2026-02-05")),
]

# id, order, amount_cents, reason, kind, created_on
REFUNDS = [
    ("R-O5007-1", "O5007", 5999, "damaged", "refund", "2026-02-20"),
    ("R-O5014-1", "O5014", 2000, "other", "refund", "2026-02-24"),
]

# id, customer, order, subject, status, team, created_on, updated_on
TICKETS = [
    ("T301", "C1001", "O5001", "Kettle arrived cracked", "open", "", "2026-02-25", "2026-02-25"),
    ("T303", "C1003", "O5006", "Standing desk arrived damaged", "open", "", "2026-02-19",
     "2026-02-19"),
    ("T304", "C1004", "O5008", "Headphones never arrived", "escalated", "shipping",
     "2026-02-20", "2026-02-21"),
    ("T310", "C1010", "O5014", "Question about my refund", "open", "", "2026-02-24",
     "2026-02-24"),
    ("T311", "C1010", "O5014", "Charged twice for order O5014", "escalated", "billing",
     "2026-02-26", "2026-02-27"),
    ("T315", "C1015", "O5020", "Tent still not delivered", "open", "", "2026-02-24",
     "2026-02-24"),
    ("T318", "C1018", "O5030", "Charged twice for my floor lamp", "open", "", "2026-02-27",
     "2026-02-27"),
]

# id, ticket, kind, team, note, created_on
EVENTS = [
    ("T304-E1", "T304", "escalated", "shipping", "Carrier reports the parcel as lost.",
     "2026-02-21"),
    ("T311-E1", "T311", "escalated", "billing", "Possible duplicate card charge.", "2026-02-27"),
]

FIRST = ["Olivia", "Liam", "Sofia", "Ethan", "Amara", "Lucas", "Yuki", "Omar", "Ingrid",
         "Tomas", "Priya", "Felix", "Zoe", "Arjun", "Nadia", "Hugo", "Leila", "Samir",
         "Greta", "Mikael", "Ayesha", "Diego", "Clara", "Jonas", "Mei"]
LAST = ["Andersen", "Bianchi", "Castillo", "Dubois", "Eriksen", "Fontaine", "Gupta",
        "Hoffmann", "Ivanova", "Jensen", "Kowalski", "Lindqvist", "Moreno", "Novak",
        "Oyelaran", "Petersen", "Quintero", "Rahman", "Sato", "Tanaka", "Urquhart",
        "Varga", "Wojcik", "Yilmaz", "Zimmermann"]
CITIES = [("Boise", "ID", "83702"), ("Tucson", "AZ", "85701"), ("Omaha", "NE", "68102"),
          ("Raleigh", "NC", "27601"), ("Tulsa", "OK", "74103"), ("Reno", "NV", "89501"),
          ("Albany", "NY", "12207"), ("Fresno", "CA", "93721"), ("Akron", "OH", "44308"),
          ("Eugene", "OR", "97401"), ("Spokane", "WA", "99201"), ("Mobile", "AL", "36602")]
STREETS = ["Oak", "Cedar", "Lake", "Hill", "River", "Park", "Church", "Mill", "Spring",
           "Ridge"]
CATALOG = [("BTL-STL", "Steel water bottle", 2400), ("BAG-TOT", "Canvas tote bag", 1800),
           ("LMP-BED", "Bedside lamp", 3900), ("PAN-NST", "Nonstick pan", 4600),
           ("TWL-SET", "Bath towel set", 5200), ("HDP-EAR", "Earbuds", 6900),
           ("BKS-CLS", "Bookshelf speaker", 11900), ("RUG-JUT", "Jute rug", 8900),
           ("CLK-WAL", "Wall clock", 3100), ("PLT-SET", "Dinner plate set", 5600),
           ("FRM-PHT", "Photo frame", 1500), ("BKP-TRV", "Travel backpack", 9400)]
STATUSES = ["delivered", "delivered", "delivered", "shipped", "processing", "pending",
            "cancelled"]


def filler(rng):
    """Generated customers, orders, shipments, refunds and tickets (ids C2xxx, O6xxx)."""
    customers, orders, refunds, tickets = [], [], [], []
    order_no, ticket_no = 6001, 401
    for n in range(1, 46):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        city, state, zipc = rng.choice(CITIES)
        cid = f"C{2000 + n}"
        email = f"{first}.{last}{n}@example.org".lower()
        street = f"{rng.randint(10, 999)} {rng.choice(STREETS)} St"
        customers.append((cid, f"{first} {last}", email, f"555-01{n:02d}-{rng.randint(10, 99)}",
                          street, city, state, zipc, rng.choice(["standard", "gold"]),
                          f"202{rng.randint(0, 5)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"))
        for _ in range(rng.randint(1, 3)):
            oid = f"O{order_no}"
            order_no += 1
            status = rng.choice(STATUSES)
            day = rng.randint(1, 27)
            placed = f"2026-02-{day:02d}" if status != "pending" else "2026-03-01"
            items = [(sku, name, rng.randint(1, 2), price)
                     for sku, name, price in rng.sample(CATALOG, rng.randint(1, 3))]
            ship = None
            if status in ("delivered", "shipped"):
                carrier = rng.choice([UPS, FEDEX, USPS])
                tracking = f"{carrier[:2].upper()}{rng.randint(10**9, 10**10 - 1)}"
                shipped = f"2026-02-{min(day + 1, 28):02d}"
                delivered = f"2026-02-{min(day + 4, 28):02d}" if status == "delivered" else None
                ship = (carrier, tracking, "delivered" if delivered else "in_transit", shipped,
                        delivered)
            orders.append((oid, cid, placed, status, rng.choice([0, 499, 650]), items, ship,
                           (street, city, state, zipc)))
            if status == "delivered" and rng.random() < 0.2:
                amount = items[0][3]
                refunds.append((f"R-{oid}-1", oid, amount, "damaged", "refund",
                                f"2026-02-{min(day + 5, 28):02d}"))
            if status == "cancelled":
                total = sum(q * p for _, _, q, p in items)
                refunds.append((f"R-{oid}-1", oid, total, "other", "cancellation",
                                f"2026-02-{min(day + 1, 28):02d}"))
            if rng.random() < 0.25:
                subject = rng.choice(["Where is my order?", "Item arrived damaged",
                                      "Question about my invoice", "Need a gift receipt"])
                status_t = rng.choice(["open", "closed", "escalated"])
                team = "shipping" if status_t == "escalated" else ""
                tickets.append((f"T{ticket_no}", cid, oid, subject, status_t, team,
                                placed, placed))
                ticket_no += 1
    return customers, orders, refunds, tickets


def build(path):
    """Write the database to ``path``."""
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    addresses = {c[0]: c[4:8] for c in CUSTOMERS}
    rows = [(*o, addresses[o[1]]) for o in ORDERS]
    customers, orders, refunds, tickets = filler(random.Random(20260302))
    db.executemany("INSERT INTO customers VALUES (?,?,?,?,?,?,?,?,?,?)", CUSTOMERS + customers)
    for oid, cid, placed, status, ship_cents, items, ship, addr in rows + orders:
        cancelled = placed if status == "cancelled" else None
        db.execute("INSERT INTO orders VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                   (oid, cid, placed, status, ship_cents, *addr, "card ending 4242", cancelled,
                    "customer request" if cancelled else None))
        for line, (sku, name, qty, unit) in enumerate(items, 1):
            db.execute("INSERT INTO order_items VALUES (?,?,?,?,?,?)",
                       (oid, line, sku, name, qty, unit))
        if ship:
            db.execute("INSERT INTO shipments VALUES (?,?,?,?,?,?)", (oid, *ship))
    db.executemany("INSERT INTO refunds VALUES (?,?,?,?,?,?)", REFUNDS + refunds)
    db.executemany("INSERT INTO tickets VALUES (?,?,?,?,?,?,?,?)", TICKETS + tickets)
    db.executemany("INSERT INTO ticket_events VALUES (?,?,?,?,?,?)", EVENTS)
    db.commit()
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    build(sys.argv[1])
