"""A small Python file that the chunker makes one chunk holding four definitions no chunk
speaks for (a class, its two methods, a function): the file the tests of definitions' own
vectors, of each line read once, of the whole pass index and of the symbol store."""

CART = '''import decimal


class Cart:
    """Items a customer is about to buy."""

    def add(self, item):
        self.items.append(item)

    def total(self):
        return sum(i.price for i in self.items)


def checkout(cart):
    return cart.total()
'''
