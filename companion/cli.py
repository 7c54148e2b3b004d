"""placeholder, replaced below"""
def main(): pass
