"""REST API for studies and memberships. Other apps add their routers in stereoscope/urls.py."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action, api_view, permission_classes
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response

from . import invitations, services, trash
from .health import health_report
from .models import Membership, Role, Study
from .permissions import VIEWER, StudyRolePermission, role_for, studies_for
from .untrusted import whole_number


class StudySerializer(serializers.ModelSerializer):
    my_role = serializers.SerializerMethodField()

    class Meta:
        model = Study
        fields = ["id", "name", "description", "is_library", "created_at", "my_role"]
        read_only_fields = ["is_library", "created_at"]

    def get_my_role(self, study) -> str | None:
        return role_for(self.context["request"].user, study)


class MembershipSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "username", "role", "added_at"]
        read_only_fields = ["added_at"]


class StudyScopedMixin:
    """For viewsets under /api/studies/{study_pk}/...: loads the study and applies the role layer."""

    permission_classes = [StudyRolePermission]
    read_role = VIEWER
    write_role = Role.RESEARCHER

    study_field = "study"  # the lookup from the viewset's model to its Study

    def get_study(self):
        if not hasattr(self, "_study"):
            self._study = get_object_or_404(Study, pk=self.kwargs["study_pk"])
        return self._study

    def get_queryset(self):
        queryset = super().get_queryset()
        if getattr(self, "swagger_fake_view", False):  # schema generation has no study
            return queryset.none()
        return queryset.filter(**{self.study_field: self.get_study()})


class StudyViewSet(viewsets.ModelViewSet):
    serializer_class = StudySerializer
    permission_classes = [StudyRolePermission]
    action_roles = {"update": Role.ADMIN, "partial_update": Role.ADMIN, "destroy": Role.ADMIN}

    def get_queryset(self):
        return studies_for(self.request.user)

    def get_study(self):
        if "pk" not in self.kwargs:
            return None  # list and create: any signed-in user
        return get_object_or_404(Study, pk=whole_number(self.kwargs["pk"]))  # the route takes any text: '²' is a 404

    def perform_create(self, serializer):
        try:
            study = services.create_study(created_by=self.request.user, **serializer.validated_data)
        except services.StudyCreationRefused as exc:
            raise PermissionDenied(str(exc)) from None
        serializer.instance = study

    def perform_update(self, serializer):
        serializer.instance = services.update_study(
            serializer.instance, actor=self.request.user, **serializer.validated_data
        )

    @extend_schema(responses={204: None, 409: dict})
    def destroy(self, request, *args, **kwargs):
        """Move the study to the trash: hidden, restorable by its admins for TRASH_RETENTION_DAYS, then purged.
        Refused (409) while any of its jobs is queued or running."""
        try:
            trash.trash_study(self.get_object(), actor=request.user)
        except trash.TrashError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TrashedStudySerializer(serializers.ModelSerializer):
    trashed_by = serializers.CharField(source="trashed_by.username", read_only=True, default=None)
    purge_after = serializers.SerializerMethodField()

    class Meta:
        model = Study
        fields = ["id", "name", "description", "trashed_at", "trashed_by", "purge_after"]
        read_only_fields = fields

    def get_purge_after(self, study) -> str:
        return trash.purge_after(study).isoformat()


class TrashViewSet(viewsets.GenericViewSet):
    """The studies in the trash that the user administers (site staff: all). Admins restore; staff purge."""

    permission_classes = [IsAuthenticated]
    serializer_class = TrashedStudySerializer
    queryset = Study.all_objects.none()

    def get_queryset(self):
        return trash.trashed_for(self.request.user)

    def list(self, request):
        return Response(self.get_serializer(self.get_queryset(), many=True).data)

    @extend_schema(request=None, responses={200: StudySerializer, 409: dict})
    @action(detail=True, methods=["post"])
    def restore(self, request, pk=None):
        study = self.get_object()
        try:
            study = trash.restore_study(study, actor=request.user)
        except trash.TrashError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(StudySerializer(study, context=self.get_serializer_context()).data)

    @extend_schema(responses={204: None, 403: dict, 409: dict})
    def destroy(self, request, pk=None):
        """Purge the study for good (site staff only)."""
        study = self.get_object()
        if not request.user.is_staff:
            return Response({"detail": "Only site staff purge the trash."}, status=status.HTTP_403_FORBIDDEN)
        try:
            trash.purge_study(study, actor=request.user)
        except trash.TrashError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MembershipViewSet(
    StudyScopedMixin,
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = MembershipSerializer
    queryset = Membership.objects.select_related("user")
    read_role = Role.ADMIN
    write_role = Role.ADMIN

    def create(self, request, *args, **kwargs):
        username = request.data.get("username", "")
        role = request.data.get("role", Role.CODER)
        email = request.data.get("email", "")
        try:
            membership, path = invitations.add_or_invite_member(
                study=self.get_study(), username=str(username), email=str(email), role=role, actor=request.user
            )
        except services.MembershipError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        if path is None:  # one answer whether or not the account exists: no probing for usernames
            return Response(
                {"detail": invitations.added_message(str(username).strip(), role), "username": str(username).strip()},
                status=status.HTTP_202_ACCEPTED,
            )
        data = MembershipSerializer(membership).data
        if path:  # a new account (or this study's re-invitation): the one-time link is in this response only
            url = request.build_absolute_uri(path)
            data["invitation_url"] = url
            data["invitation_mailed"] = invitations.mail_invitation(membership.user, membership.study, url)
        return Response(data, status=status.HTTP_201_CREATED)

    def perform_update(self, serializer):
        role = serializer.validated_data.get("role", serializer.instance.role)
        services.add_member(
            study=self.get_study(), username=serializer.instance.user.username, role=role, actor=self.request.user
        )
        serializer.instance.refresh_from_db()

    def perform_destroy(self, instance):
        services.remove_member(membership=instance, actor=self.request.user)


@extend_schema(responses={200: dict, 503: dict})
@api_view(["GET"])
@permission_classes([AllowAny])
def health(request):
    report = health_report()
    return Response(report, status=200 if report["ok"] else 503)
