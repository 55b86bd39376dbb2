import { useState } from "preact/hooks";
import { api, type Schemas } from "../../api/client";
import type { Me } from "../../App";
import { actionChoices, documentChoices, Name, remember, topicChoices, topicLabel } from "../../components/choices";
import { AdminOnly, bool, num, optID, Resource, str, type ResourceSpec, type Values } from "./Resource";

type Topic = Schemas["Topic"];
type Action = Schemas["Action"];
type Doc = Schemas["Document"];
type TopicAction = Schemas["TopicAction"];
type TopicDocument = Schemas["TopicDocument"];
type Mapping = Schemas["PageTopicMapping"];
type MatchType = Schemas["PageTopicMappingRequest"]["matchType"];

/** /admin/topics: topics with their actions and documents, the actions
 * and documents themselves, and the page-topic mappings. */
export function Topics(props: { me: Me | null }) {
  return (
    <AdminOnly me={props.me} title="Topics">
      <TopicsPage />
    </AdminOnly>
  );
}

function TopicsPage() {
  const [version, setVersion] = useState(0);
  const changed = () => setVersion((n) => n + 1);
  const [selected, setSelected] = useState<Topic | null>(null);

  const topicBody = (v: Values): Schemas["TopicRequest"] => ({ name: str(v, "name"), description: str(v, "description") });
  const topics: ResourceSpec<Topic> = {
    id: "topic",
    title: "Topics",
    noun: "topic",
    onChanged: changed,
    key: (t) => t.topicID,
    columns: [
      { label: "Name", cell: (t) => t.name },
      { label: "Description", cell: (t) => t.description },
    ],
    fields: [
      { name: "name", label: "Name" },
      { name: "description", label: "Description", type: "textarea" },
    ],
    empty: { name: "", description: "" },
    toValues: (t) => ({ name: t.name, description: t.description }),
    list: async (pageNumber) => {
      const ans = await api.GET("/api/Topics", { params: { query: { pageNumber, pageSize: 20 } } });
      if (ans.data) remember("topic", ans.data.items.map((t) => ({ id: t.topicID, name: t.name })));
      return ans;
    },
    create: (v) => api.POST("/api/Topics", { body: topicBody(v) }),
    update: (id, v) => api.PUT("/api/Topics/{id}", { params: { path: { id } }, body: topicBody(v) }),
    remove: (id) => {
      if (selected?.topicID === id) setSelected(null);
      return api.DELETE("/api/Topics/{id}", { params: { path: { id } } });
    },
    rowActions: (t) => (
      <button type="button" class="secondary select-topic" aria-pressed={selected?.topicID === t.topicID} onClick={() => setSelected(t)}>
        Actions and documents
      </button>
    ),
  };

  const actionBody = (v: Values): Schemas["ActionRequest"] => ({
    name: str(v, "name"),
    hookName: str(v, "hookName"),
    channelID: optID(v, "channelID"),
    isActive: bool(v, "isActive"),
    requiresConfirmation: bool(v, "requiresConfirmation"),
  });
  const actions: ResourceSpec<Action> = {
    id: "action",
    title: "Actions",
    noun: "action",
    onChanged: changed,
    key: (a) => a.actionID,
    columns: [
      { label: "Name", cell: (a) => a.name },
      { label: "Hook", cell: (a) => a.hookName },
      { label: "Channel", cell: (a) => a.channelID ?? "any" },
      { label: "Active", cell: (a) => (a.isActive ? "Yes" : "No") },
      { label: "Needs confirmation", cell: (a) => (a.requiresConfirmation ? "Yes" : "No") },
    ],
    fields: [
      { name: "name", label: "Name" },
      { name: "hookName", label: "Hook name" },
      { name: "channelID", label: "Channel id (optional)", type: "number" },
      { name: "isActive", label: "Active", type: "checkbox" },
      { name: "requiresConfirmation", label: "Needs an agent's confirmation", type: "checkbox" },
    ],
    empty: { name: "", hookName: "", channelID: "", isActive: true, requiresConfirmation: false },
    toValues: (a) => ({
      name: a.name,
      hookName: a.hookName,
      channelID: a.channelID === null ? "" : String(a.channelID),
      isActive: a.isActive,
      requiresConfirmation: a.requiresConfirmation,
    }),
    list: (pageNumber) => api.GET("/api/Actions", { params: { query: { pageNumber, pageSize: 20 } } }),
    create: (v) => api.POST("/api/Actions", { body: actionBody(v) }),
    update: (id, v) => api.PUT("/api/Actions/{id}", { params: { path: { id } }, body: actionBody(v) }),
    remove: (id) => api.DELETE("/api/Actions/{id}", { params: { path: { id } } }),
  };

  const documentBody = (v: Values): Schemas["DocumentRequest"] => ({
    title: str(v, "title"),
    content: typeof v["content"] === "string" ? v["content"] : "",
    channelID: optID(v, "channelID"),
    isHook: bool(v, "isHook"),
    hookName: bool(v, "isHook") ? str(v, "hookName") : "",
  });
  const documents: ResourceSpec<Doc> = {
    id: "document",
    title: "Documents",
    noun: "document",
    onChanged: changed,
    key: (d) => d.documentID,
    columns: [
      { label: "Title", cell: (d) => d.title },
      { label: "Content", cell: (d) => (d.isHook ? `from the hook ${d.hookName}` : d.content.length > 80 ? d.content.slice(0, 80) + "…" : d.content) },
      { label: "Channel", cell: (d) => d.channelID ?? "any" },
    ],
    fields: [
      { name: "title", label: "Title" },
      { name: "content", label: "Content", type: "textarea" },
      { name: "channelID", label: "Channel id (optional)", type: "number" },
      { name: "isHook", label: "Filled by a hook at run time", type: "checkbox" },
      { name: "hookName", label: "Hook name", showIf: (v) => v["isHook"] === true },
    ],
    empty: { title: "", content: "", channelID: "", isHook: false, hookName: "" },
    toValues: (d) => ({
      title: d.title,
      content: d.content,
      channelID: d.channelID === null ? "" : String(d.channelID),
      isHook: d.isHook,
      hookName: d.hookName,
    }),
    list: (pageNumber) => api.GET("/api/Documents", { params: { query: { pageNumber, pageSize: 20 } } }),
    create: (v) => api.POST("/api/Documents", { body: documentBody(v) }),
    update: (id, v) => api.PUT("/api/Documents/{id}", { params: { path: { id } }, body: documentBody(v) }),
    remove: (id) => api.DELETE("/api/Documents/{id}", { params: { path: { id } } }),
  };

  const mappingBody = (v: Values): Schemas["PageTopicMappingRequest"] => ({
    topicID: num(v, "topicID"),
    urlPattern: str(v, "urlPattern"),
    matchType: str(v, "matchType") as MatchType,
  });
  const mappings: ResourceSpec<Mapping> = {
    id: "mapping",
    title: "Page-topic mappings",
    noun: "page mapping",
    reloadKey: version,
    key: (m) => m.pageTopicMappingID,
    columns: [
      { label: "Page", cell: (m) => m.urlPattern },
      { label: "Match", cell: (m) => m.matchType },
      { label: "Topic", cell: (m) => <Name kind="topic" id={m.topicID} /> },
    ],
    fields: [
      { name: "urlPattern", label: "Page URL (absolute http or https)", type: "url" },
      {
        name: "matchType",
        label: "Match",
        type: "select",
        options: [
          { value: "exact", label: "This page exactly" },
          { value: "prefix", label: "Every page under this URL" },
        ],
      },
      {
        name: "topicID",
        label: "Topic",
        type: "chooser",
        chooser: { load: topicChoices, search: true, placeholder: "Choose a topic", labelOf: topicLabel, reloadKey: version },
      },
    ],
    empty: { urlPattern: "", matchType: "exact", topicID: "" },
    toValues: (m) => ({ urlPattern: m.urlPattern, matchType: m.matchType, topicID: String(m.topicID) }),
    list: (pageNumber) => api.GET("/api/PageTopicMappings", { params: { query: { pageNumber, pageSize: 20 } } }),
    create: (v) => api.POST("/api/PageTopicMappings", { body: mappingBody(v) }),
    update: (id, v) => api.PUT("/api/PageTopicMappings/{id}", { params: { path: { id } }, body: mappingBody(v) }),
    remove: (id) => api.DELETE("/api/PageTopicMappings/{id}", { params: { path: { id } } }),
  };

  return (
    <section aria-labelledby="topics-page-title">
      <h1 id="topics-page-title">Topics</h1>
      <Resource spec={topics} />
      {selected && <TopicLinks key={selected.topicID} topic={selected} version={version} />}
      <Resource spec={actions} />
      <Resource spec={documents} />
      <Resource spec={mappings} />
    </section>
  );
}

/** The selected topic's actions (in priority order) and documents. */
function TopicLinks(props: { topic: Topic; version: number }) {
  const topicId = props.topic.topicID;

  const topicActions: ResourceSpec<TopicAction> = {
    id: "topic-action",
    title: `Actions of ${props.topic.name}`,
    noun: "topic action",
    heading: "h3",
    key: (ta) => ta.topicActionID,
    columns: [
      { label: "Action", cell: (ta) => <Name kind="action" id={ta.actionID} /> },
      { label: "Priority", cell: (ta) => ta.priority },
      { label: "Active", cell: (ta) => (ta.isActive ? "Yes" : "No") },
    ],
    fields: [
      {
        name: "actionID",
        label: "Action",
        type: "chooser",
        createOnly: true,
        chooser: { load: actionChoices, placeholder: "Choose an action", reloadKey: props.version },
      },
      { name: "priority", label: "Priority (lower runs first)", type: "number" },
      { name: "isActive", label: "Active", type: "checkbox", createOnly: true },
    ],
    empty: { actionID: "", priority: "0", isActive: true },
    toValues: (ta) => ({ actionID: String(ta.actionID), priority: String(ta.priority), isActive: ta.isActive }),
    list: (pageNumber) => api.GET("/api/TopicActions", { params: { query: { pageNumber, pageSize: 20, topicId } } }),
    create: (v) =>
      api.POST("/api/TopicActions", { body: { topicID: topicId, actionID: num(v, "actionID"), priority: num(v, "priority"), isActive: bool(v, "isActive") } }),
    update: (id, v) => api.PUT("/api/TopicActions/{id}", { params: { path: { id } }, body: { priority: num(v, "priority") } }),
    remove: (id) => api.DELETE("/api/TopicActions/{id}", { params: { path: { id } } }),
  };

  const topicDocuments: ResourceSpec<TopicDocument> = {
    id: "topic-document",
    title: `Documents of ${props.topic.name}`,
    noun: "topic document",
    heading: "h3",
    key: (td) => td.topicDocumentID,
    columns: [
      { label: "Document", cell: (td) => <Name kind="document" id={td.documentID} /> },
      { label: "Relevance", cell: (td) => td.relevanceScore },
    ],
    fields: [
      {
        name: "documentID",
        label: "Document",
        type: "chooser",
        createOnly: true,
        chooser: { load: documentChoices, placeholder: "Choose a document", reloadKey: props.version },
      },
      { name: "relevanceScore", label: "Relevance (0 to 100)", type: "number" },
    ],
    empty: { documentID: "", relevanceScore: "50" },
    toValues: (td) => ({ documentID: String(td.documentID), relevanceScore: String(td.relevanceScore) }),
    list: (pageNumber) => api.GET("/api/TopicDocuments", { params: { query: { pageNumber, pageSize: 20, topicId } } }),
    create: (v) =>
      api.POST("/api/TopicDocuments", { body: { topicID: topicId, documentID: num(v, "documentID"), relevanceScore: num(v, "relevanceScore") } }),
    update: (id, v) => api.PUT("/api/TopicDocuments/{id}", { params: { path: { id } }, body: { relevanceScore: num(v, "relevanceScore") } }),
    remove: (id) => api.DELETE("/api/TopicDocuments/{id}", { params: { path: { id } } }),
  };

  return (
    <section class="topic-links" aria-label={`Actions and documents of ${props.topic.name}`}>
      <Resource spec={topicActions} />
      <Resource spec={topicDocuments} />
    </section>
  );
}
