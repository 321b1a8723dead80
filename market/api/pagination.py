from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    page_size = 20
    page_size_query_param = "page_size"
    max_page_size = 100

    def get_page_size(self, request):
        """The page size asked for, 1 to 100; anything else is a 400 (not silently the default)."""
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= self.max_page_size):
            raise ValidationError({self.page_size_query_param: [f"A whole number from 1 to {self.max_page_size}."]})
        return int(raw)

    def get_page_number(self, request, paginator):
        """The page asked for, a whole number from 1 (as documented): an empty, written or
        negative page is a 404, never silently the first page."""
        raw = request.query_params.get(self.page_query_param)
        if raw is None:
            return 1
        if not (raw.isascii() and raw.isdigit() and int(raw) >= 1):
            raise NotFound("Invalid page: pages are numbered from 1.")
        return raw

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1, "maximum": self.max_page_size}
            elif parameter["name"] == self.page_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1}
        return parameters
